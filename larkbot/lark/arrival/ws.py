"""Long-connection mode: lark-oapi's `ws.Client` isolated in its own thread and event loop.

lark-oapi 1.7.5's `lark_oapi.ws.client` binds a module-global loop at import time and drives
it with `run_until_complete`, so it cannot share the service's running loop. We import it
inside a dedicated thread after installing a fresh loop there, point the module global at that
loop, and hand every raw event payload to the main loop with `run_coroutine_threadsafe`.
The SDK reconnects on its own (`auto_reconnect=True`, server-pushed interval/count); we only
track and log the state. One instance per process (the SDK's loop is a module global).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from larkbot.lark.arrival.webhook import parse_envelope, parse_object
from larkbot.logs import adopt_library_logger, get_logger

log = get_logger("larkbot.lark.arrival.ws")

Submit = Callable[[dict[str, Any]], Awaitable[Any]]


class LarkLongConnection:
    """Receive events over Lark's long connection and feed `submit(envelope)` on the main loop."""

    def __init__(
        self,
        app_id: str,
        app_secret: str,
        domain: str,
        submit: Submit,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        ack_timeout: float = 2.5,
        log_level: str = "WARNING",
    ) -> None:
        self._app_id = app_id
        self._app_secret = app_secret
        self._domain = domain.rstrip("/")
        self._submit = submit
        self._ack_timeout = ack_timeout
        self._log_level = log_level
        self._main_loop = loop  # where submit() runs; start() defaults it to the running loop
        self._ws_loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._receiver: asyncio.Task[Any] | None = None  # the SDK's receive loop, on the ws loop
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.state = "idle"

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            if state in ("disconnected", "reconnecting", "failed"):
                log.warning(
                    "lark_ws_state",
                    state=state,
                    hint="the long connection is down: events wait until it is back (the SDK "
                    "reconnects); check the network and that the app is published",
                )
            else:
                log.info("lark_ws_state", state=state)

    @property
    def running(self) -> bool:
        """True while the connection thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the connection thread; call from the main loop (or pass `loop=` at init)."""
        if self._thread is not None:
            raise RuntimeError("long connection already started")
        self._main_loop = self._main_loop or asyncio.get_running_loop()
        self._set_state("starting")
        self._thread = threading.Thread(target=self._run, name="lark-ws", daemon=True)
        self._thread.start()

    def handle_payload(self, payload: bytes) -> Any:
        """Called on the ws thread per event frame; submit()'s result becomes the ACK data."""
        # Blocks until the main loop's submit() finished (bounded by ack_timeout), so a failed
        # hand-off reaches Lark as an error ACK (and a redelivery) instead of being lost.
        # For card.action.trigger that result is the callback's answer (toast / card).
        loop = self._main_loop
        if loop is None:
            raise RuntimeError("long connection not started")
        # Same shape as the webhook path hands over (validated, header.token stripped).
        envelope = parse_envelope(parse_object(payload))
        if envelope is None:
            return None  # a legacy v1 event: acknowledged and ignored, as over HTTP

        async def _call() -> Any:
            return await self._submit(envelope)

        future = asyncio.run_coroutine_threadsafe(_call(), loop)
        try:
            result = future.result(timeout=self._ack_timeout)
        except TimeoutError:
            event_id = envelope["header"]["event_id"]
            log.warning("lark_ws_submit_slow", event_id=event_id, timeout=self._ack_timeout)
            raise
        return result

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._ws_loop = loop
        try:
            # Imported here, on this thread, so the SDK's import-time loop is this one.
            from lark_oapi.core.enum import LogLevel
            from lark_oapi.ws import client as ws_client

            ws_client.loop = loop
            adopt_library_logger("Lark")  # its records go through our JSON log, not stdout
            self._client = self._build(ws_client, LogLevel[self._log_level.upper()])
            if self._stopping.is_set():
                return
            self._set_state("connecting")
            self._client.start()  # blocks until stop() stops the loop
        except asyncio.CancelledError:  # stop() came while it was connecting
            return
        except Exception as err:
            if self._stopping.is_set():
                return
            self._set_state("failed")
            log.error("lark_ws_failed", error=f"{type(err).__name__}: {err}")
        finally:
            _drain_and_close(loop)

    def _build(self, ws_client: Any, level: Any) -> Any:
        """A ws.Client whose handler forwards raw payloads and whose hooks track the state."""
        from lark_oapi.event.dispatcher_handler import EventDispatcherHandler

        outer = self

        class _Forward(EventDispatcherHandler):  # type: ignore[misc]
            def _do_without_validation(self, payload: bytes) -> Any:
                return outer.handle_payload(payload)

        class _Client(ws_client.Client):  # type: ignore[misc,name-defined]
            async def _connect(self) -> None:
                # Stopping: end the SDK's start or reconnect loop as cancelled, which it lets
                # through quietly; any exception it logs at ERROR ("connect failed") first.
                if outer._stopping.is_set():
                    raise asyncio.CancelledError
                await super()._connect()
                if self._conn is not None:
                    outer._set_state("connected")

            async def _receive_message_loop(self) -> None:
                outer._receiver = asyncio.current_task()  # so stop() can end it first
                if not outer._stopping.is_set():  # stop() came before this task first ran
                    await super()._receive_message_loop()

            async def _disconnect(self) -> None:
                await super()._disconnect()
                if not outer._stopping.is_set():
                    outer._set_state("disconnected")

        client = _Client(
            self._app_id,
            self._app_secret,
            log_level=level,
            event_handler=_Forward(),
            domain=self._domain,
            auto_reconnect=True,
        )
        client.on_reconnecting = lambda: self._set_state("reconnecting")
        return client

    def stop(self, timeout: float = 5.0) -> None:
        """Close the connection and end the thread (bounded; blocking — see `aclose`)."""
        self._stopping.set()
        loop, client = self._ws_loop, self._client
        if loop is not None and client is not None and loop.is_running():
            client._auto_reconnect = False  # no public switch in lark-oapi 1.7.5
            closing = asyncio.run_coroutine_threadsafe(self._close(client), loop)
            try:
                closing.result(timeout=timeout)
            except Exception as err:
                log.warning("lark_ws_close_failed", error=type(err).__name__)
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the thread already closed its loop
                loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                # e.g. stuck in the SDK's blocking endpoint request; the thread is a daemon.
                log.warning("lark_ws_thread_still_running")
        self._set_state("stopped")

    async def _close(self, client: Any) -> None:
        """On the ws loop: end the receive loop, then close the socket."""
        # In that order: the SDK's loop would take our close for a failure, log it as an ERROR
        # and re-raise it in a task nobody awaits ("Task exception was never retrieved") — two
        # errors on every deploy. Cancelled first, it ends quietly (it only catches Exception).
        receiver = self._receiver
        if receiver is not None and not receiver.done():
            receiver.cancel()
            await asyncio.wait([receiver])
        await client._disconnect()

    async def aclose(self, timeout: float = 5.0) -> None:
        """`stop()` from async code without blocking the main loop."""
        await asyncio.to_thread(self.stop, timeout)


def _drain_and_close(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what the SDK left on its loop (ping loop, receive loop) and close the loop."""
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            gather = asyncio.gather(*pending, return_exceptions=True)
            loop.run_until_complete(asyncio.wait_for(gather, 2.0))
    except Exception as err:
        log.debug("lark_ws_drain_error", error=type(err).__name__)
    finally:
        loop.close()

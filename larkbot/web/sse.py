"""Writing a run's events as Server-Sent Events: `id: <run>:<seq>`, `data: {json}`, pings."""

from __future__ import annotations

from aiohttp import web

from larkbot.text import is_number
from larkbot.web.runs import EventsLost, Run

HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # nginx: pass events through as they come
}


def event_id(run: Run, seq: int) -> str:
    """The SSE id of event `seq` of `run` (what Last-Event-ID carries back)."""
    return f"{run.run_id}:{seq}"


def parse_event_id(value: str) -> tuple[str, int] | None:
    """(run_id, seq) from a Last-Event-ID header, or None when malformed."""
    run_id, _, seq = value.strip().rpartition(":")
    if not run_id or not is_number(seq):
        return None
    return run_id, int(seq)


async def stream_run(
    request: web.Request, run: Run, after: int, ping_seconds: float
) -> web.StreamResponse:
    """Send the events after `after`, then follow the run to its end, pinging while idle.

    A client that disconnects only stops this loop: the run goes on and keeps its log.
    """
    resp = web.StreamResponse(headers={**HEADERS, "X-Run-Id": run.run_id})
    await resp.prepare(request)
    seq = after
    try:
        while True:
            for n, data in run.after(seq):
                await resp.write(f"id: {event_id(run, n)}\ndata: {data}\n\n".encode())
                seq = n
            if run.done and seq >= run.seq:
                break
            if not await run.wait(seq, ping_seconds):
                await resp.write(b": ping\n\n")
    except (ConnectionResetError, ConnectionError):
        return resp  # the client went away; the turn is not tied to it
    except EventsLost:  # this client fell more than MAX_EVENTS behind: it must reload
        await resp.write(b": events lost; reload the session\n\n")
    await resp.write_eof()
    return resp

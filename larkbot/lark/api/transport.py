"""HTTP plumbing for the Lark Open Platform: tenant token cache and bounded, retried requests."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import httpx

from larkbot import metrics
from larkbot.lark.api.binary import (
    TRANSPORT_ERROR,
    Download,
    code_of,
    decode_json,
    is_json,
    read_capped,
)
from larkbot.lark.api.errors import CredentialsRefused, LarkAPIError
from larkbot.lark.api.pacing import Pacer
from larkbot.lark.api.shared_cache import SharedCache, app_key
from larkbot.logs import get_logger

log = get_logger("larkbot.lark.api.transport")

TOKEN_PATH = "/open-apis/auth/v3/tenant_access_token/internal"
RATE_LIMITED = frozenset({99991400, 230020})  # app-level and IM-level frequency limits
INVALID_TOKEN = frozenset({99991661, 99991663, 99991664, 99991671})
REPORT_EVERY = 60.0  # a failing token fetch is logged (with its fix) once a minute, not per call


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one call tries: attempts, jittered exponential backoff, rate-limit wait cap.

    `settle_seconds`: an idempotent call (a send with its `uuid`, a card update) whose outcome
    is unknown — it went out, no answer came in time — keeps being retried, the same body, past
    `attempts` until this long after it began: Lark either did it (a retried send is answered
    with the message the first one created) or does it now, so the outcome is one message, not
    a failure the turn would report while the message had in fact arrived.
    """

    attempts: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    ratelimit_wait_max: float = 10.0
    timeout: float = 10.0
    connect_timeout: float = 5.0
    settle_seconds: float = 90.0

    def backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff for the given (0-based) retry number."""
        return random.uniform(0, min(self.backoff_max, self.backoff_base * 2**attempt))

    def ratelimit_wait(self, reset_header: str | None, attempt: int) -> float:
        """Honour `x-ogw-ratelimit-reset` (seconds), capped, plus jitter; else plain backoff."""
        try:
            reset = float(reset_header) if reset_header else 0.0
        except ValueError:
            reset = 0.0
        if reset <= 0:
            return self.backoff(attempt)
        return min(reset, self.ratelimit_wait_max) + random.uniform(0, self.backoff_base)


class LarkTransport:
    """One shared httpx client, a single-flight tenant token cache, pacing and call counting.

    With `cache` (the shared database) the token outlives restarts and is shared by replicas;
    `on_call` hears of every HTTP attempt (the month's ledger); `pacer` orders and paces sends.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        domain: str,
        app_id: str,
        app_secret: str,
        retry: RetryPolicy | None = None,
        token_margin: float = 300.0,
    ) -> None:
        self._http = http
        self._domain = domain.rstrip("/")
        self._app_id = app_id
        self._app_secret = app_secret
        self.retry = retry or RetryPolicy()
        self._margin = token_margin
        self._token = ""
        self._expires_at = 0.0
        self._lock = asyncio.Lock()
        self.pacer = Pacer()
        self.cache: SharedCache | None = None
        self.on_call: Callable[[str], None] | None = None
        self.cache_key = app_key("tenant_token", domain, app_id, app_secret)
        self._rejected = ""  # a token Lark refused: never taken from the shared cache again
        self.token_error: tuple[float, LarkAPIError] | None = None  # the last failed fetch
        self._reported = -REPORT_EVERY  # when the last failure was logged

    @property
    def _timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self.retry.timeout, connect=self.retry.connect_timeout)

    def has_token(self) -> bool:
        """True while a fetched token is held and fresh (no call needed to use it)."""
        return bool(self._token) and time.monotonic() < self._expires_at

    def _keep(self, token: str, seconds_left: float) -> None:
        self._token = token
        self._expires_at = time.monotonic() + max(seconds_left - self._margin, seconds_left / 2)

    async def _shared_token(self) -> str:
        """A token another replica (or an earlier run) fetched, with enough life left."""
        hit = await self.cache.get(self.cache_key) if self.cache is not None else None
        if hit is None or hit[0] == self._rejected:
            return ""
        left = hit[1] - time.time()
        if left <= 2 * self._margin:
            return ""  # about to be replaced anyway: fetch a fresh one
        self._keep(hit[0], left)
        return hit[0]

    async def token(self) -> str:
        """A valid tenant token, fetched once for all who wait; a failed fetch fails the waiters."""
        if self._token and time.monotonic() < self._expires_at:
            return self._token
        started = time.monotonic()
        async with self._lock:
            # Whoever held the lock before us may have just refreshed it.
            if self._token and time.monotonic() < self._expires_at:
                return self._token
            # ... or failed to: one refused POST for all the waiters, not one POST each.
            failed = self.token_error
            if failed is not None and failed[0] >= started:
                raise failed[1]
            shared = await self._shared_token()
            if shared:
                return shared
            try:
                body = await self._call(
                    "POST",
                    TOKEN_PATH,
                    json={"app_id": self._app_id, "app_secret": self._app_secret},
                )
            except LarkAPIError as err:
                self._failed(CredentialsRefused.of(err) if refused(err) else err)
            token = body.get("tenant_access_token")
            if not isinstance(token, str) or not token:
                raise LarkAPIError(TRANSPORT_ERROR, "token response without tenant_access_token")
            try:
                expire = float(body.get("expire") or 0)
            except (TypeError, ValueError):
                expire = 0.0  # unusable expiry: use the token for this call only
            self._keep(token, expire)
            if self.token_error is not None:
                log.info("lark_credentials_accepted")  # after a refusal: replies go out again
                self.token_error, self._reported = None, -REPORT_EVERY
            if self.cache is not None and expire > 0:
                await self.cache.put(self.cache_key, token, time.time() + expire)
            log.info("lark_token_refreshed", expires_in=expire)
            return token

    def _failed(self, err: LarkAPIError) -> NoReturn:
        """Remember and report (once a minute, naming the fix) a failed token fetch; raise it."""
        now = time.monotonic()
        self.token_error = (now, err)
        if now - self._reported >= REPORT_EVERY:
            self._reported = now
            refusal = isinstance(err, CredentialsRefused)
            log.error(
                "lark_credentials_refused" if refusal else "lark_token_failed",
                code=err.code,
                error=err.msg,
                fix=err.hint or "check lark.domain and the network",
                note="nothing can be sent until this works; waiting replies go out then "
                "(logged once a minute)",
            )
        raise err from None

    def invalidate(self, token: str) -> None:
        """Forget `token` (if it is still the cached one) so the next call fetches a new one."""
        self._rejected = token
        if self._token == token:
            self._token, self._expires_at = "", 0.0

    def _count(self, path: str) -> None:
        if self.on_call is not None:
            self.on_call(path)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        json: dict[str, Any] | None = None,
        data: dict[str, str] | None = None,
        files: dict[str, tuple[str, bytes, str]] | None = None,
        chat: str | None = None,
        idempotent: bool = False,
        bearer: str = "",
    ) -> dict[str, Any]:
        """An authenticated call; returns the decoded body (code 0) or raises LarkAPIError.

        `bearer`: a person's user access token (`u-…`) sent instead of the tenant token; Lark
        refusing it is the caller's to handle (no tenant token is ever swapped in).

        `data` + `files` send a multipart form (uploads): `files` maps a field to
        (file name, bytes, content type). `chat` (a message to that chat or user): the call
        waits its turn in the chat's lane and goes out at the chat's pace (`Pacer`).
        `idempotent`: doing it twice has the effect of doing it once (a `uuid`, the same full
        content), so an unknown outcome is retried for `RetryPolicy.settle_seconds`.
        """
        kwargs: dict[str, Any] = {"params": params, "json": json, "data": data, "files": files}
        kwargs["idempotent"] = idempotent
        kwargs["bearer"] = bearer
        if chat is None:
            return await self._call(method, path, **kwargs, auth=True)
        async with self.pacer.lane(chat):
            return await self._call(method, path, **kwargs, auth=True, chat=chat)

    async def download(
        self, path: str, *, params: dict[str, str] | None = None, max_bytes: int
    ) -> Download:
        """GET a binary resource, at most `max_bytes` (TooLarge past it, before reading it all).

        Lark answers errors as JSON (`code`, `msg`), successes as the raw bytes.
        """
        retoken = True
        for _ in range(2):  # one forced token refresh, as for JSON calls
            token = await self.token()
            headers = {"Authorization": f"Bearer {token}"}
            await self.pacer.attempt("")
            self._count(path)
            try:
                async with self._http.stream(
                    "GET",
                    self._domain + path,
                    params=params,
                    headers=headers,
                    timeout=self._timeout,
                ) as resp:
                    if resp.status_code >= 400 or is_json(resp):
                        body = decode_json(await resp.aread())
                        err = LarkAPIError(
                            code_of(resp.status_code, body),
                            str(body.get("msg") or resp.reason_phrase),
                            _log_id(resp),
                            resp.status_code,
                        )
                        if err.code in INVALID_TOKEN and retoken:
                            retoken = False
                            self.invalidate(token)
                            continue
                        raise err
                    return await read_capped(resp, max_bytes)
            except httpx.TransportError as err:
                raise LarkAPIError(
                    TRANSPORT_ERROR, f"{type(err).__name__} calling {path}", "", 0
                ) from None
        raise LarkAPIError(99991663, "access token rejected twice")

    async def _call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        json: dict[str, Any] | None = None,
        data: dict[str, str] | None = None,
        files: dict[str, tuple[str, bytes, str]] | None = None,
        auth: bool = False,
        chat: str | None = None,
        idempotent: bool = False,
        bearer: str = "",
    ) -> dict[str, Any]:
        retoken = auth and not bearer  # one forced token refresh per call
        last: LarkAPIError | None = None
        settle_until = time.monotonic() + self.retry.settle_seconds if idempotent else 0.0
        attempt = 0
        while attempt == 0 or self._again(attempt, last, settle_until):
            attempt += 1
            token = bearer or (await self.token() if auth else "")
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            await self.pacer.attempt(chat or "")
            try:
                resp = await self._http.request(
                    method,
                    self._domain + path,
                    params=params,
                    json=json,
                    data=data,
                    files=files,
                    headers=headers,
                    timeout=self._timeout,
                )
            except httpx.TransportError as err:
                sent = not isinstance(err, httpx.ConnectError | httpx.ConnectTimeout)
                if sent:
                    self._count(path)  # it may have reached Lark: the quota may count it
                metrics.count_lark_call(path, TRANSPORT_ERROR)
                last = LarkAPIError(TRANSPORT_ERROR, f"{type(err).__name__} calling {path}", "", 0)
                last.unanswered = sent
                await self._pause(attempt, self._backoff(attempt), path, last, settle_until)
                continue
            self._count(path)
            body = _decode(resp)
            code = _code(resp, body)
            metrics.count_lark_call(path, code if code != TRANSPORT_ERROR else resp.status_code)
            if code == 0 and resp.status_code < 400:
                return body
            last = LarkAPIError(
                code, str(body.get("msg") or resp.reason_phrase), _log_id(resp), resp.status_code
            )
            last.scopes = _violated_scopes(body)
            if code in INVALID_TOKEN and retoken:
                retoken = False
                self.invalidate(token)
                log.info("lark_token_rejected", path=path, code=code)
                continue
            if resp.status_code == 429 or code in RATE_LIMITED:
                reset = resp.headers.get("x-ogw-ratelimit-reset")
                wait = self.retry.ratelimit_wait(reset, attempt - 1)
                await self._pause(attempt, wait, path, last, settle_until)
                continue
            if resp.status_code >= 500:
                await self._pause(attempt, self._backoff(attempt), path, last, settle_until)
                continue
            raise last
        assert last is not None
        raise last

    def _backoff(self, attempt: int) -> float:
        return self.retry.backoff(attempt - 1)

    def _again(self, attempts: int, last: LarkAPIError | None, settle_until: float) -> bool:
        """Whether another attempt follows the `attempts` made so far (see `RetryPolicy`)."""
        if attempts < self.retry.attempts:
            return True
        return last is not None and unknown_outcome(last) and time.monotonic() < settle_until

    async def _pause(
        self, attempt: int, wait: float, path: str, err: LarkAPIError, settle_until: float
    ) -> None:
        if not self._again(attempt, err, settle_until):
            return  # no sleep after the final attempt; the caller raises
        log.warning(
            "lark_call_retry",
            path=path,
            code=err.code,
            http_status=err.http_status,
            attempt=attempt,
            wait=round(wait, 3),
        )
        await asyncio.sleep(wait)


def unknown_outcome(err: LarkAPIError) -> bool:
    """True when Lark may have done what was asked: the call went out but no answer came.

    A connection that never opened (nothing reached Lark) and an error Lark answered (a 5xx
    included) are no such case: their attempts are the policy's `attempts`, as for any call.
    """
    return err.unanswered


def refused(err: LarkAPIError) -> bool:
    """Lark answered and said no for good: not a rate limit, not its own 5xx, not silence."""
    limited = err.code in RATE_LIMITED or err.http_status == 429
    return err.code != TRANSPORT_ERROR and not limited and 0 < err.http_status < 500


def _decode(resp: httpx.Response) -> dict[str, Any]:
    try:
        body = resp.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _violated_scopes(body: dict[str, Any]) -> tuple[str, ...]:
    """The scopes a permission error names (`error.permission_violations[].subject`)."""
    error = body.get("error")
    found = error.get("permission_violations") if isinstance(error, dict) else None
    if not isinstance(found, list):
        return ()
    return tuple(str(v["subject"]) for v in found if isinstance(v, dict) and v.get("subject"))


def _code(resp: httpx.Response, body: dict[str, Any]) -> int:
    return code_of(resp.status_code, body)


def _log_id(resp: httpx.Response) -> str:
    return resp.headers.get("x-tt-logid", "")

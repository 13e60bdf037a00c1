"""FakeLark: a real aiohttp Lark Open Platform on 127.0.0.1 for tests and benchmarks.

Usage::

    async with FakeLark() as fake:            # app_id "cli_test", app_secret "secret"
        client = LarkClient(http, fake.domain, fake.app_id, fake.app_secret)
        fake.fail_next("POST /open-apis/im/v1/messages/{id}/reply", status=429, times=2)
        await client.reply("om_user_1", "text", {"text": "hi"}, uuid="r-om_user_1")
        assert fake.sent[0]["body"] == {"text": "hi"}
        await fake.wait_for(lambda: len(fake.sent) >= 2, timeout=5)   # bounded, no sleep

Routes (Lark's paths and JSON shapes; route keys for `fail_next`/`set_latency` are
"METHOD /path" with any `{name}` placeholder, e.g. `{id}` or `{message_id}`):

- POST  /open-apis/auth/v3/tenant_access_token/internal  → `t-fake-N`, `expire` = token_expire;
  an app_id or app_secret other than `fake.app_id` / `fake.app_secret` → HTTP 400, code 99991543
  (set `fake.app_secret` to stand for a secret rotated, or fixed, in the console)
- GET   /open-apis/bot/v3/info                           → `{"bot": {open_id, app_name, …}}`
- POST  /open-apis/im/v1/messages?receive_id_type=…      → create (uuid dedup, size limits)
- POST  /open-apis/im/v1/messages/{id}/reply             → reply (uuid dedup, reply_in_thread)
- PATCH /open-apis/im/v1/messages/{id}                   → card update (interactive only)
- GET   /open-apis/im/v1/messages/{id}                   → `{"items": [message]}`
- POST  /open-apis/im/v1/messages/{id}/reactions        → reaction_id
- POST  /open-apis/cardkit/v1/cards, PUT …/cards/{card_id}/elements/{element_id}/content,
  PATCH …/cards/{card_id}/settings, PUT …/cards/{card_id}   (state in `fake.cardkit`)
- POST  /open-apis/im/v1/images, /open-apis/im/v1/files  multipart uploads (`fake.uploads`)
- GET   /open-apis/im/v1/messages/{id}/resources/{file_key}  seed with `add_resource`
- GET   /open-apis/contact/v3/users/{user_id}  seed `fake.users`; `contact_scope = False`
  answers 99991672 (see tests/fakes/lark_media.py for shapes and error codes)
- the workspace (docs, wiki, search, sheets, bitable, tasks) as the person whose user token a
  call carries: `fake.workspace` (tests/fakes/lark_workspace.py)
- GET   /open-apis/application/v6/applications/{app_id}, /open-apis/event/v1/connection:
  `app_info`, `self_manage`, `online_connections` (tests/fakes/lark_app.py)
- GET   /open-apis/authen/v1/user_info, /open-apis/task/v2/tasks  with a user token from
  `fake.user_tokens` (tests/fakes/lark_user.py; filled by tests/fakes/lark_accounts.py)
- ephemeral cards (+ delete), urgent_app, document comments (get, list, reply) and docx raw
  text: `ephemerals`, `urgents`, `comments` (`seed_comment`), `comment_replies`, `docs`,
  `topic_chats` (tests/fakes/lark_native.py)

Lark's per-chat send limit is enforced on create and reply: more than `chat_limit` (5) messages
within `chat_window` (1 s) to one chat (a reply's chat is its parent's, else the parent's id)
answer HTTP 400, code 230020, with `x-ogw-ratelimit-reset` (fractional seconds here); each
refusal is recorded in `rate_limited`, and a send to that chat before the reset is over counts
in `retried_early`. `chat_limit = 0` turns it off (benchmarks do).

Cards are refused like Lark refuses them (`fake.card_rules`, a `CardRules`, shared with CardKit):
more than 4 tables in one markdown component or `max_tables` (5) in the whole card, more than
`max_elements` (200) components → 230099 with "ErrCode: 11310" in `msg`; past `max_bytes`
(30 KB) → 230025 (CardKit: 200860); `refuse_all` refuses every card JSON. Tests make them
stricter to see what the bot does when Lark's undocumented limits bite.

Controls: `fail_next(route, status=500, code=None, times=1, headers=None, msg=...)` (429 → code
99991400 by default; faults are answered before the auth check), `set_latency(seconds, route=None)`,
`answer_late(route, seconds, times=1)` (do the call now, answer it `seconds` later),
`revoke_tokens()`, `token_expire` (seconds; 0 → every call refetches), `add_message(id, chat_id,
**fields)` (seed a user message: reply/GET find its chat and thread; replies to unknown ids are
accepted with chat_id ""), `texts()`, `wait_for(predicate, timeout)`.

Every /open-apis/ route but the token one checks `Authorization: Bearer <issued token>` (HTTP
400 with 99991661 when missing, 99991663 when unknown or revoked via `revoke_tokens()`).

Records: `sent` (one dict per message really created: message_id, msg_type, content (the
JSON string), body (parsed content), uuid, chat_id, receive_id, receive_id_type, reply_to,
reply_in_thread, thread_id), `patches`, `reactions`, `requests` (every call, incl. faults),
`token_fetches`, `dedup_hits` (sends whose `uuid` was seen before; `cardkit.dedup_hits`
for card operations), `messages` (by id, for GET; seed with `add_message`;
`add_forward` for a merge_forward and its children), `uploads`, `downloads`, `contact_lookups`,
`cardkit.cards[card_id]` (`FakeCard`: elements' text, element_history, sequences, ops,
streaming_mode, settings_updates, sent_message_id).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.lark_app import add_app_routes, ready_app_info
from tests.fakes.lark_cardkit import ApiError, CardKit, CardRules
from tests.fakes.lark_media import Resource, Upload, add_media_routes
from tests.fakes.lark_native import add_native_routes
from tests.fakes.lark_routes import JSON_BODY, add_routes
from tests.fakes.lark_user import add_user_routes
from tests.fakes.lark_workspace import FakeWorkspace, add_workspace_routes

_PLACEHOLDER = re.compile(r"\{[^}]*\}")
TOKEN_ROUTE = "POST /open-apis/auth/v3/tenant_access_token/internal"


def route_key(key: str) -> str:
    """Normalise "METHOD /path/{anything}" so `{id}` and `{message_id}` name the same route."""
    method, _, path = key.strip().partition(" ")
    return f"{method.upper()} {_PLACEHOLDER.sub('{}', path.strip())}"


@dataclass
class Fault:
    """One injected failure: HTTP status, Lark code/msg, extra headers, how many more times."""

    status: int
    code: int
    msg: str
    headers: dict[str, str]
    times: int


@dataclass
class RecordedRequest:
    """One request as FakeLark saw it."""

    method: str
    path: str
    route: str
    query: dict[str, str]
    json: Any
    authorization: str
    fault: Fault | None = None


@dataclass
class FakeLark:
    """The fake platform: `async with FakeLark() as fake`, then point `lark.domain` at it."""

    app_id: str = "cli_test"
    app_secret: str = "secret"
    bot_open_id: str = "ou_bot"
    bot_name: str = "larkbot-test"
    token_expire: int = 7200
    domain: str = ""
    sent: list[dict[str, Any]] = field(default_factory=list)
    patches: list[dict[str, Any]] = field(default_factory=list)
    reactions: list[dict[str, Any]] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    forwards: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # id → children
    cardkit: CardKit = field(default_factory=CardKit)
    uploads: list[Upload] = field(default_factory=list)
    resources: dict[tuple[str, str], Resource] = field(default_factory=dict)
    downloads: list[tuple[str, str]] = field(default_factory=list)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    contact_scope: bool = True
    contact_lookups: int = 0
    token_fetches: int = 0
    dedup_hits: int = 0
    chat_limit: int = 5  # messages per chat_window to one chat, as Lark allows; 0 = no limit
    chat_window: float = 1.0
    rate_limited: list[dict[str, Any]] = field(default_factory=list)  # refused: chat, at, reset
    retried_early: int = 0  # sends to a chat that came before its advertised reset was over
    # application info and long connections (tests/fakes/lark_app.py, tests/fakes/lark_ws.py)
    app_info: dict[str, Any] = field(default_factory=lambda: ready_app_info("larkbot-test"))
    self_manage: bool = True
    app_info_reads: int = 0
    online_connections: int = 0
    gateway: Any = None  # a FakeLarkWS served on this port too: one lark.domain for both, as Lark
    # documents, sheets, bases and tasks, per person's user token (tests/fakes/lark_workspace.py)
    workspace: FakeWorkspace = field(default_factory=FakeWorkspace)
    user_tokens: dict[str, dict[str, Any]] = field(default_factory=dict)  # u-… → person
    # Lark-native routes (tests/fakes/lark_native.py)
    ephemerals: list[dict[str, Any]] = field(default_factory=list)
    urgents: list[dict[str, Any]] = field(default_factory=list)
    comments: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    comment_replies: list[dict[str, Any]] = field(default_factory=list)
    docs: dict[str, str] = field(default_factory=dict)  # docx id -> its raw text
    topic_chats: set[str] = field(default_factory=set)  # ephemeral cards refused there

    def __post_init__(self) -> None:
        self.valid_tokens: set[str] = set()
        self.uuids: dict[str, str] = {}  # uuid -> message_id (Lark dedups for 1 h)
        self._faults: dict[str, list[Fault]] = {}
        self._latency: dict[str, float] = {}
        self._late: dict[str, list[list[float]]] = {}  # route -> [[seconds, times left], ...]
        self._changed: asyncio.Condition | None = None
        self._runner: web.AppRunner | None = None
        self._ids = 0
        self._chat_sends: dict[str, list[float]] = {}  # chat -> arrival times in the window
        self._blocked_until: dict[str, float] = {}  # chat -> end of the last advertised reset

    # ---- lifecycle -------------------------------------------------------------------------
    async def start(self) -> FakeLark:
        """Listen on 127.0.0.1 on a free port; sets `domain`."""
        self._changed = asyncio.Condition()
        # room for uploads past Lark's 30 MB limit, so the route can refuse them as Lark does
        app = web.Application(middlewares=[self._middleware], client_max_size=64 * 1024 * 1024)
        add_routes(app, self)
        add_media_routes(app, self)
        add_app_routes(app, self)
        add_workspace_routes(app, self)
        add_user_routes(app, self)  # before the workspace: user_info
        add_native_routes(app, self)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        host, port = self._runner.addresses[0][:2]
        self.domain = f"http://{host}:{port}"
        return self

    async def close(self) -> None:
        """Stop the server."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeLark:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- test controls ---------------------------------------------------------------------
    @property
    def card_rules(self) -> CardRules:
        """What cards are refused (card-wide tables, elements, bytes); shared with CardKit."""
        return self.cardkit.rules

    @card_rules.setter
    def card_rules(self, rules: CardRules) -> None:
        self.cardkit.rules = rules

    def fail_next(
        self,
        route: str,
        status: int = 500,
        code: int | None = None,
        times: int = 1,
        headers: dict[str, str] | None = None,
        msg: str = "injected fault",
    ) -> None:
        """Answer the next `times` calls of `route` with this failure (429 → code 99991400)."""
        if code is None:
            code = 99991400 if status == 429 else 99991663 if status == 401 else 1
        fault = Fault(status, code, msg, dict(headers or {}), times)
        self._faults.setdefault(route_key(route), []).append(fault)

    def set_latency(self, seconds: float, route: str | None = None) -> None:
        """Delay every answer (or only `route`'s) by `seconds`."""
        self._latency[route_key(route) if route else "*"] = seconds

    def answer_late(self, route: str, seconds: float, times: int = 1) -> None:
        """Do the next `times` calls of `route` at once but answer each only after `seconds`.

        What a client sees when Lark is slow to answer a call it has already carried out (a
        timeout, then the message is there anyway); a retry meanwhile gets the real answer.
        """
        self._late.setdefault(route_key(route), []).append([seconds, times])

    def revoke_tokens(self) -> None:
        """Invalidate every issued tenant token: the next API call gets 99991663."""
        self.valid_tokens.clear()

    def add_message(self, message_id: str, chat_id: str = "oc_chat", **fields: Any) -> None:
        """Seed a message (e.g. the user's) so GET/reply can find its chat and thread."""
        msg: dict[str, Any] = {"message_id": message_id, "chat_id": chat_id, "msg_type": "text"}
        msg["body"] = {"content": json.dumps({"text": ""})}
        msg.update(fields)
        self.messages[message_id] = msg

    def add_forward(
        self, message_id: str, children: list[dict[str, Any]], chat_id: str = "oc_chat"
    ) -> None:
        """Seed a merge_forward message: GET answers it followed by its children, as Lark does."""
        self.add_message(message_id, chat_id, msg_type="merge_forward")
        self.messages[message_id]["body"] = {"content": "Merged and Forwarded Message"}
        self.forwards[message_id] = [{**c, "upper_message_id": message_id} for c in children]

    def add_resource(
        self,
        message_id: str,
        file_key: str,
        content: bytes = b"",
        content_type: str = "application/octet-stream",
        filename: str = "",
        size: int = 0,
    ) -> None:
        """Seed a file/image of a user's message (`size` > 0: that many bytes, generated)."""
        self.resources[(message_id, file_key)] = Resource(content, content_type, filename, size)

    def p2p_chat(self, open_id: str) -> str:
        """The chat id of `open_id`'s DM with the bot."""
        return f"oc_p2p_{open_id}"

    def texts(self) -> list[str]:
        """Convenience: the `text` of every sent text message, in order."""
        return [m["body"].get("text", "") for m in self.sent if m["msg_type"] == "text"]

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 30.0) -> None:
        """Wait (bounded) until `predicate()` holds; re-checked after every recorded request.

        The bound only matters when the product is broken: a loaded machine may take seconds.
        """
        assert self._changed is not None, "FakeLark not started"
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), timeout)

    # ---- internals used by the routes ------------------------------------------------------
    def check_chat_rate(self, chat: str) -> None:
        """Lark's 5 messages/s per chat: past it, 230020 with `x-ogw-ratelimit-reset`."""
        if self.chat_limit <= 0:
            return
        now = time.monotonic()
        if now < self._blocked_until.get(chat, 0.0):
            self.retried_early += 1  # a client that did not wait out the advertised reset
        recent = [t for t in self._chat_sends.get(chat, []) if t > now - self.chat_window]
        if len(recent) >= self.chat_limit:
            reset = recent[-self.chat_limit] + self.chat_window - now
            self.rate_limited.append({"chat": chat, "at": now, "reset": reset})
            self._blocked_until[chat] = now + reset
            self._chat_sends[chat] = recent
            raise ApiError(
                230020,
                "This operation triggers the frequency limit",
                {
                    "x-ogw-ratelimit-limit": str(self.chat_limit),
                    "x-ogw-ratelimit-reset": f"{reset:.3f}",
                },
            )
        self._chat_sends[chat] = [*recent, now]

    def next_id(self, prefix: str) -> str:
        """A fresh fake id such as om_fake_3."""
        self._ids += 1
        return f"{prefix}_fake_{self._ids}"

    async def notify(self) -> None:
        """Wake `wait_for` callers."""
        if self._changed is not None:
            async with self._changed:
                self._changed.notify_all()

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        resource = request.match_info.route.resource
        route = route_key(f"{request.method} {resource.canonical if resource else request.path}")
        try:
            multipart = request.content_type.startswith("multipart/")  # read by the route
            body: Any = await request.json() if request.can_read_body and not multipart else None
        except ValueError:
            body = None
        rec = RecordedRequest(
            request.method,
            request.path,
            route,
            dict(request.query),
            body,
            request.headers.get("Authorization", ""),
        )
        self.requests.append(rec)
        delay = self._latency.get(route, self._latency.get("*", 0.0))
        if delay:
            await asyncio.sleep(delay)
        try:
            rec.fault = self._take_fault(route)
            if rec.fault is not None:
                f = rec.fault
                return web.json_response(
                    {"code": f.code, "msg": f.msg}, status=f.status, headers=f.headers
                )
            if resource is not None and route != TOKEN_ROUTE and "/open-apis/" in route:
                self._check_auth(rec.authorization)
            request[JSON_BODY] = body
            response = await handler(request)
            late = self._late.get(route)
            if late:
                seconds = late[0][0]
                late[0][1] -= 1
                if late[0][1] <= 0:
                    late.pop(0)
                await self.notify()  # what it did is visible now; the answer comes later
                await asyncio.sleep(seconds)
            return response
        except ApiError as err:
            body: dict[str, Any] = {"code": err.code, "msg": err.msg}
            if err.error is not None:
                body["error"] = err.error
            return web.json_response(body, status=400, headers=err.headers)
        finally:
            await self.notify()

    def _take_fault(self, route: str) -> Fault | None:
        queue = self._faults.get(route)
        if not queue:
            return None
        fault = queue[0]
        fault.times -= 1
        if fault.times <= 0:
            queue.pop(0)
        return fault

    def _check_auth(self, authorization: str) -> None:
        if not authorization.startswith("Bearer ") or not authorization[7:]:
            raise ApiError(99991661, "Missing access token for authorization")
        token = authorization[7:]
        if token not in self.valid_tokens and not token.startswith("u-"):  # user: per route
            raise ApiError(99991663, "Invalid access token for authorization")

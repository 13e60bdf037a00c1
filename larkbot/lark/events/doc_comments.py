"""Document comments (`drive.notice.comment_add_v1`): @-mention the bot, get a reply in the thread.

On the ack path only the claim happens: the reply's id (`comment:<reply_id>`) in the inbound
journal, so a redelivered event is answered once. Then, as a background task: the comment
(its quote and the question) and the document are read with the commenter's own Lark
authorization when the workspace service has one for them (else only the comment, read with
the bot's token, and the agent is told so); the agent runs as the commenter, with the same
policy as in a chat (owner check, signed events only) and the document's text marked as
untrusted; the answer is posted as the bot's reply in the thread (shortened past
`COMMENT_REPLY_CHARS`; past `lark.turn_timeout_seconds` the reply says it took too long).
The bot's own reply is claimed as done at once, and events from the bot itself are dropped,
so it never answers itself. A claim whose replica died mid-answer
(its lease ran out) comes back through the dispatcher's recovery and is answered again.
Lark calls: 1 (the comment) + 1 (the document, docx only, with the user's token) + 1 (reply).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any
from urllib.parse import quote

from larkbot.context import RequestContext
from larkbot.lark.api.client import LarkClient, as_object
from larkbot.lark.api.native_api import comment_path, get_comment, reply_comment
from larkbot.lark.claims.journal import InboundJournal
from larkbot.lark.events.comment_text import TIMED_OUT, answer_text, prompt_for, question_of
from larkbot.logs import get_logger
from larkbot.tasks import cancel_and_wait
from tools.workspace.access import WorkspaceAccess
from tools.workspace.common import Session

log = get_logger("larkbot.lark.events.doc_comments")
COMMENT_EVENT = "drive.notice.comment_add_v1"
COMMENT_KIND = "comment"  # the journal payload's `kind`: recovery hands these back here
DOC_CHARS = 8000  # of the document's text shown to the model
MAX_CONCURRENT = 4  # comment answers running at once on this replica


@dataclass(frozen=True)
class CommentAsk:
    """One @-mention of the bot in a document comment."""

    file_token: str
    file_type: str
    comment_id: str
    reply_id: str
    open_id: str
    signed: bool = True

    @property
    def key(self) -> str:
        """Its entry in the inbound journal."""
        return comment_key(self.reply_id or self.comment_id)


def comment_key(reply_or_comment_id: str) -> str:
    """A comment's (or reply's) entry in the inbound journal."""
    return f"{COMMENT_KIND}:{reply_or_comment_id}"


def parse(envelope: dict[str, Any], bot_open_id: str, signed: bool) -> CommentAsk | None:
    """The ask in the event, or None (not mentioned, from the bot itself, malformed)."""
    event = as_object(envelope.get("event"))
    meta = as_object(event.get("notice_meta"))
    user = as_object(meta.get("from_user_id")) or as_object(event.get("user_id"))  # p1: user_id
    open_id = str(user.get("open_id") or "")
    mentioned = event.get("is_mentioned", meta.get("is_mentioned", event.get("is_mention")))
    token = str(meta.get("file_token") or event.get("file_token") or "")
    kind = str(meta.get("file_type") or event.get("file_type") or "")
    comment_id = str(event.get("comment_id") or "")
    if not (token and kind and comment_id and open_id) or mentioned is not True:
        return None
    if open_id == bot_open_id or meta.get("from_user_type") == "app":
        return None  # the bot's own reply (and other apps') is never answered
    return CommentAsk(token, kind, comment_id, str(event.get("reply_id") or ""), open_id, signed)


class DocComments:
    """Claims, answers and replies to document comments that @-mention the bot."""

    def __init__(
        self,
        client: LarkClient,
        journal: InboundJournal,
        agent: Any,  # Agent: `run(session_id, text, ctx)` → FinalAnswer
        is_owner: Callable[[str], Awaitable[bool]],
        services: Mapping[str, Any],
        bot_open_id: str,
        timeout: Callable[[], float] = lambda: 600.0,  # lark.turn_timeout_seconds
    ) -> None:
        self.client = client
        self.journal = journal
        self.agent = agent
        self.is_owner = is_owner
        self.services = services
        self.bot_open_id = bot_open_id
        self.timeout = timeout
        # comments bypass the chat queues: a bound of their own keeps a flood from the model
        self.slots = asyncio.Semaphore(MAX_CONCURRENT)
        self.running: set[str] = set()  # keys answered here: recovery never takes them over

    async def claim(self, envelope: dict[str, Any], signed: bool) -> CommentAsk | None:
        """Before the ack: the ask, when this replica won it (None: ignored or a duplicate)."""
        ask = parse(envelope, self.bot_open_id, signed)
        if ask is None:
            return None
        payload = json.dumps({"kind": COMMENT_KIND, **asdict(ask)})
        return ask if await self.journal.claim(ask.key, payload) else None

    async def reclaimed(self, payload: str) -> CommentAsk | None:
        """Recovery took over a claim whose replica died: the ask to answer again, or None
        (nothing to answer: the bot's own reply, or a payload no ask can be made of; marked
        done so no sweep takes it over again)."""
        raw = json.loads(payload)
        try:
            return CommentAsk(**{f.name: raw[f.name] for f in fields(CommentAsk) if f.name in raw})
        except TypeError:
            key = comment_key(str(raw.get("reply_id") or raw.get("comment_id")))
            log.warning("lark_comment_not_recovered", key=key)
            await self.journal.done(key)
            return None

    async def answer(self, ask: CommentAsk) -> None:
        """Read, run the agent as the commenter, reply in the thread; the claim ends done."""
        bound = log.bind(comment_id=ask.comment_id, file_type=ask.file_type)
        self.running.add(ask.key)
        lease = asyncio.create_task(self._keep_claim(ask.key), name="lark-comment-lease")
        try:
            # one session for both reads: a token refreshed by the first serves the second
            session = await self._session(ask.open_id)
            comment = await self._read_comment(ask, session)
            document = await self._read_document(ask, session) if session else None
            ctx = RequestContext(
                interface="lark",
                session_id=f"comment:{ask.file_token}:{ask.comment_id}",
                sender_id=ask.open_id,
                is_owner=ask.signed and await self.is_owner(ask.open_id),
                chat_type="group",  # a thread anyone may reply in: senders kept apart
            ).with_untrusted(f"the text of document {ask.file_token}")
            question = question_of(comment, ask.reply_id, ask.open_id)
            doc = (ask.file_type, ask.file_token)
            token = session.token if session else ""
            prompt = prompt_for(question, str(comment.get("quote") or ""), doc, document, token)
            try:
                async with self.slots, asyncio.timeout(self.timeout()):
                    final = await self.agent.run(ctx.session_id, prompt, ctx)
                text = answer_text(final.text)
            except TimeoutError:  # the commenter is told, not left waiting; not retried
                bound.warning("lark_comment_timeout")
                text = TIMED_OUT
            reply_id = await reply_comment(
                self.client, ask.file_token, ask.file_type, ask.comment_id, text
            )
            if reply_id:  # its own event, should one come, is never answered
                own = json.dumps({"kind": COMMENT_KIND, "reply_id": reply_id})
                await self.journal.claim(comment_key(reply_id), own)
                await self.journal.done(comment_key(reply_id))
            bound.info("lark_comment_answered", with_user_token=session is not None)
        except asyncio.CancelledError:
            raise
        except Exception:  # not retried: its tools may have run; the log says why
            bound.error("lark_comment_failed", exc_info=True)
        finally:
            await cancel_and_wait(lease)
            self.running.discard(ask.key)
        await self.journal.done(ask.key)

    async def _keep_claim(self, key: str) -> None:
        """Renew the claim while the answer runs, so no sweeper takes it over meanwhile."""
        while True:
            await asyncio.sleep(self.journal.lease_seconds / 3)
            try:
                await self.journal.renew(key)
            except Exception:  # storage trouble: the next round tries again within the lease
                log.warning("lark_comment_renew_failed", exc_info=True)

    async def _session(self, open_id: str) -> Session | None:
        """Lark as the commenter (their own token), or None (no token store, not authorized,
        any failure). Its calls refresh a token Lark refuses as expired, as the tools' do."""
        access = self.services.get("workspace")
        if not isinstance(access, WorkspaceAccess):
            return None
        try:
            return Session(access, open_id, await access.tokens.token_for(open_id))
        except Exception as err:  # NotAuthorized above all: the comment alone is answered
            log.info("lark_comment_no_user_token", reason=type(err).__name__)
            return None

    async def _read_comment(self, ask: CommentAsk, session: Session | None) -> dict[str, Any]:
        """The comment, as the commenter when possible, else with the bot's token."""
        if session is not None:
            path = comment_path(ask.file_token, ask.comment_id)
            params = {"file_type": ask.file_type, "user_id_type": "open_id"}
            try:
                return await session.call("GET", path, params=params)
            except Exception:
                log.info("lark_comment_user_read_failed", exc_info=True)
        return await get_comment(self.client, ask.file_token, ask.file_type, ask.comment_id)

    async def _read_document(self, ask: CommentAsk, session: Session) -> str | None:
        """The document's text (docx only), read as the commenter; None when unreadable."""
        if ask.file_type != "docx":
            return None
        path = f"/open-apis/docx/v1/documents/{quote(ask.file_token, safe='')}/raw_content"
        try:
            data = await session.call("GET", path)
        except Exception:
            log.info("lark_comment_doc_unreadable", exc_info=True)
            return None
        return str(data.get("content") or "")[:DOC_CHARS]

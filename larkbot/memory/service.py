"""MemoryService: save, search, forget and recall, keyed by who is speaking and where.

Privacy is decided here, once: a turn sees the speaker's own `me` memories and its chat's
`chat` memories, nothing else. The speaker is the context's sender (a scheduled job runs as
its creator); the owner at the terminal or web page ("local", "web") is the sole configured owner
when there is exactly one, so the owner's memories follow them between Lark and the web.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable

from larkbot import metrics
from larkbot.config_sections import MemoryConfig
from larkbot.context import RequestContext
from larkbot.errors import LarkBotError
from larkbot.logs import get_logger
from larkbot.memory import recall
from larkbot.memory.search import rank, segmenter, words
from larkbot.memory.store import Memory, MemoryStore, new_id
from larkbot.policy.provenance import foreign_labels
from larkbot.recall import Recalled
from larkbot.storage.db import Database

log = get_logger(__name__)

SCOPES = ("me", "chat")
LOCAL = ("local", "web")  # the owner at the terminal, the web page's user
# Obvious credentials: the prompt says never to save secrets; this catches the careless cases.
_SECRET = re.compile(
    r"sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|-----BEGIN [A-Z ]*PRIVATE KEY|"
    r"(?i:password|passwd|密码)\s*[:=：是]\s*\S+"
)


class MemoryRefused(LarkBotError):
    """A memory request that cannot be done; the message says why (shown to the model)."""


class MemoryService:
    """Long-term memory over `MemoryStore`; `recall` is the agent's RecallHook."""

    def __init__(
        self,
        db: Database,
        config: Callable[[], MemoryConfig],
        local_person: Callable[[], str] = lambda: "local",
    ) -> None:
        self.store = MemoryStore(db)
        self.config = config
        self.local_person = local_person

    async def init(self) -> None:
        """Create the tables; load the segmenter now, not in the first turn that recalls (its
        100 ms there held up every webhook ack behind it: `python -m bench webhook`)."""
        await self.store.init()
        await asyncio.to_thread(segmenter)

    def person(self, ctx: RequestContext) -> str:
        """Whose `me` memories this turn uses."""
        if ctx.is_owner and ctx.interface in ("cli", "web") and ctx.sender_id in LOCAL:
            return self.local_person()
        return ctx.sender_id

    @staticmethod
    def chat(ctx: RequestContext) -> str:
        """The key of this conversation's `chat` memories."""
        return ctx.chat_id or f"{ctx.interface}:{ctx.session_id}"

    async def save(
        self, ctx: RequestContext, content: str, scope: str = "me", pinned: bool = False
    ) -> Memory:
        """Store a memory written by the speaker; refuses secrets and over-limit saves."""
        cfg, text = self.config(), " ".join(content.split())
        if scope not in SCOPES:
            raise MemoryRefused(f"scope must be 'me' or 'chat', not {scope!r}")
        if not text:
            raise MemoryRefused("content is empty: say what to remember")
        if len(text) > cfg.max_chars:
            raise MemoryRefused(f"a memory holds at most {cfg.max_chars} characters; shorten it")
        if _SECRET.search(text):
            raise MemoryRefused(
                "that looks like a secret (a key or password); memory never keeps those"
            )
        person = self.person(ctx)
        subject = person if scope == "me" else self.chat(ctx)
        existing = await self.store.of_subject(scope, subject)
        same = next((m for m in existing if m.content == text), None)
        if same is not None:
            return same
        if sum(1 for m in existing if m.author_id == person) >= cfg.max_per_person:
            raise MemoryRefused(
                f"memory is full for this person ({cfg.max_per_person}); forget something first"
            )
        if scope == "chat" and len(existing) >= cfg.max_per_chat:
            raise MemoryRefused(f"this chat's memory is full ({cfg.max_per_chat})")
        memory = Memory(
            id=new_id(),
            scope=scope,
            subject=subject,
            content=text,
            author_id=person,
            author_name=ctx.sender_name,
            author_owner=ctx.is_owner,
            untrusted=bool(foreign_labels(ctx.untrusted, ctx)),  # read others' text
            pinned=pinned,
            chat_id=self.chat(ctx),
            terms=" ".join(words(text)),
            created_at=time.time(),
        )
        await self.store.add(memory)
        log.info("memory_saved", id=memory.id, scope=scope, untrusted=memory.untrusted)
        return memory

    async def visible(self, ctx: RequestContext) -> list[Memory]:
        """The speaker's own memories and this chat's, oldest first."""
        return await self.store.candidates(self.person(ctx), self.chat(ctx))

    async def search(self, ctx: RequestContext, query: str, limit: int = 10) -> list[Memory]:
        """The speaker's and this chat's memories matching `query`, best first."""
        return [m for _, m in rank(query, await self.visible(ctx))][:limit]

    async def forget(self, ctx: RequestContext, memory_id: str) -> Memory:
        """Delete one memory the speaker may delete (their own, or as an owner this chat's)."""
        memory = await self.store.get(memory_id.strip())
        person = self.person(ctx)
        mine = memory is not None and (
            (memory.scope == "me" and memory.subject == person)
            or (
                memory.scope == "chat"
                and memory.subject == self.chat(ctx)
                and (memory.author_id == person or ctx.is_owner)
            )
        )
        if memory is None or not mine:
            raise MemoryRefused(f"no memory {memory_id!r} that you may forget here")
        await self.store.delete([memory.id])
        return memory

    async def forget_all(self, ctx: RequestContext) -> int:
        """Delete every memory about the speaker and the chat memories they saved here."""
        person = self.person(ctx)
        ids = [m.id for m in await self.store.of_subject("me", person, all_states=True)]
        chat = await self.store.of_subject("chat", self.chat(ctx), all_states=True)
        ids += [m.id for m in chat if m.author_id == person]
        return await self.store.delete(ids)

    async def undo(self, ctx: RequestContext, memory_id: str) -> int:
        """Undo a consolidation merge of the speaker's memory (the replaced versions return)."""
        memory = await self.store.get(memory_id.strip())
        if memory is None or memory.author_id != self.person(ctx):
            raise MemoryRefused(f"no memory {memory_id!r} of yours to undo")
        return await self.store.undo(memory.id)

    async def for_web(self, person: str) -> list[Memory]:
        """The web page's view: `person`'s own memories and every chat's (never other people's)."""
        own = await self.store.of_subject("me", person)
        return own + await self.store.of_scope("chat")

    async def __call__(self, ctx: RequestContext, query: str) -> Recalled:
        """The RecallHook: this turn's memory block; storage trouble recalls nothing."""
        cfg = self.config()
        if not cfg.enabled:
            return Recalled()
        person, started = self.person(ctx), time.perf_counter()
        try:
            candidates = await self.visible(ctx)
        except Exception:
            log.warning("memory_recall_failed", exc_info=True)
            return Recalled()
        chosen = recall.pick(candidates, person, query, cfg.pinned)
        recalled = recall.render(chosen, person, cfg.recall_tokens)
        metrics.MEMORY_RECALL_SECONDS.observe(time.perf_counter() - started)
        metrics.MEMORY_RECALL_TOKENS.observe(recalled.tokens)
        return recalled

"""The slash commands of `larkbot chat` (both loops): their list for /help, and /resume, which
lists recent terminal conversations and continues one. Consent remembered "for this session" is
kept by session id, so a resumed conversation gets back what was allowed in it (this process)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from larkbot.content_parts import text_of
from larkbot.storage.sessions import Message, SessionInfo, SessionStore, session_title
from larkbot.terminal import new_session_id
from larkbot.text import is_number

PREFIX = "cli:"  # terminal conversations; other channels' sessions have other readers
RECENT = 10

COMMANDS = (
    ("/new", "start a new conversation"),
    ("/resume", "list recent conversations; /resume N (or an id) continues one"),
    ("/memory", "what I remember about you; /memory undo ID restores an earlier version"),
    ("/forget", "/forget ID forgets one memory, /forget all every one"),
    ("/help", "list these commands"),
    ("/exit", "quit (also /quit and Ctrl-D)"),
)


def help_lines(keys: str = "") -> list[str]:
    """The commands, one per line, then the keys of this loop (e.g. what Ctrl-C does)."""
    width = max(len(name) for name, _ in COMMANDS)
    lines = ["Commands:"] + [f"  {name.ljust(width)}  {what}" for name, what in COMMANDS]
    return lines + ([keys] if keys else [])


def _title(first: list[Message]) -> str:
    return session_title(first, 60, "…")  # one terminal line: shorter, and the cut shows


@dataclass
class Resume:
    """/resume: the numbered list of recent conversations, and the switch to one of them."""

    store: SessionStore
    listed: list[str] = field(default_factory=list)  # what `/resume N` numbers refer to

    async def _recent(self, current: str) -> list[SessionInfo]:
        infos = [i for i in await self.store.list_sessions(PREFIX) if i.session_id != current]
        self.listed = [i.session_id for i in infos[:RECENT]]
        return infos[:RECENT]

    async def listing(self, current: str) -> list[str]:
        """The recent conversations, newest first, numbered for `/resume N`."""
        infos = await self._recent(current)
        if not infos:
            return ["No earlier conversations."]
        firsts = await self.store.first_rows(self.listed)
        lines = ["Recent conversations (/resume N continues one):"]
        for n, info in enumerate(infos, 1):
            when = datetime.fromtimestamp(info.updated_at).strftime("%Y-%m-%d %H:%M")
            title = _title(firsts.get(info.session_id, [])) or "(no text)"
            lines.append(f"  {n:>2}. {when}  {title}  [{info.session_id}]")
        return lines

    async def choose(self, arg: str, current: str) -> tuple[str | None, list[str]]:
        """(session id, lines saying so) for `N` or an id; (None, why not) otherwise."""
        if is_number(arg):
            if not self.listed:  # `/resume 1` without a listing first: the one it would show
                await self._recent(current)
            n = int(arg)
            if not 1 <= n <= len(self.listed):
                return None, [f"No conversation {n}: /resume lists them."]
            session = self.listed[n - 1]
        else:
            session = arg if arg.startswith(PREFIX) else PREFIX + arg
            if not await self.store.exists(session):
                return None, [f"No conversation {arg!r}: /resume lists them."]
        return session, await self._recap(session)

    async def _recap(self, session: str) -> list[str]:
        """A line naming the conversation, and its last exchange, so the user knows where it is."""
        turns = await self.store.turns(session, limit=1)
        firsts = await self.store.first_rows([session])
        lines = [f"(continuing {_title(firsts.get(session, [])) or session} [{session}])"]
        last = turns[-1][1] if turns else []
        asked = next((m for m in reversed(last) if m.get("role") == "user"), None)
        said = next(
            (m for m in reversed(last) if m.get("role") == "assistant" and m.get("content")), None
        )
        for who, message in (("you", asked), ("larkbot", said)):
            if message is not None:
                text = " ".join(text_of(message.get("content")).split())
                lines.append(f"  {who}: {text if len(text) <= 200 else text[:199] + '…'}")
        return lines


async def run_command(
    text: str, session: str, resume: Resume, keys: str = ""
) -> tuple[str, list[str]] | None:
    """/new, /help, /resume [N|id]: (the session to go on in, lines to show); None otherwise."""
    name, _, arg = text.partition(" ")
    arg = arg.strip()
    if name == "/new" and not arg:
        return new_session_id(), ["(new conversation)"]
    if name == "/help" and not arg:
        return session, help_lines(keys)
    if name != "/resume":
        return None
    if not arg:
        return session, await resume.listing(session)
    chosen, lines = await resume.choose(arg, session)
    return chosen or session, lines

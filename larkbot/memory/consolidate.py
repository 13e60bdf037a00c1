"""The consolidation pass: per person (and per author in a chat), merge duplicates and resolve
contradictions with the model; every replaced version is kept (undo), each person is told.

The model only proposes: its JSON names ids of the group it was shown, and anything else is
ignored. A merged memory keeps the group's author and the worst trust of its parts.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from larkbot.logs import get_logger
from larkbot.memory.search import words
from larkbot.memory.store import Memory, MemoryStore, new_id

log = get_logger(__name__)

Complete = Callable[[list[dict[str, Any]]], Awaitable[str]]  # messages -> the model's text
Notify = Callable[[str, str], Awaitable[None]]  # (person's open_id, text) -> a direct message

PROMPT = """You tidy an assistant's long-term memory: short facts one person saved (about
themselves, or context of a chat they are in).
Merge memories that say the same thing into one sentence. When two contradict, the newer one
wins: drop the older. Keep everything else out of your answer. Never invent facts.
Answer with JSON only: {"merge": [{"ids": ["m…", "m…"], "content": "merged sentence"}],
"drop": [{"id": "m…", "because": "m… (the newer memory)"}]}"""


@dataclass
class Report:
    """What one pass changed for one person: lines for their card."""

    person: str
    lines: list[str] = field(default_factory=list)


def parse_plan(text: str) -> dict[str, Any]:
    """The model's JSON (fenced or not); {} when it is not JSON."""
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        plan = json.loads(body)
    except ValueError:
        return {}
    return plan if isinstance(plan, dict) else {}


class Consolidator:
    """Runs passes over the groups changed since a time; `notify` tells each person."""

    def __init__(self, store: MemoryStore, complete: Complete, notify: Notify | None = None):
        self.store = store
        self.complete = complete
        self.notify = notify

    async def run(self, since: float = 0.0) -> list[Report]:
        """One pass; a group whose model call fails is skipped (tried again next time)."""
        reports: dict[str, Report] = {}
        for scope, subject, author in await self.store.groups(since):
            group = [
                m for m in await self.store.of_subject(scope, subject) if m.author_id == author
            ]
            try:
                lines = await self._group(group)
            except Exception:
                log.warning("memory_consolidation_failed", scope=scope, exc_info=True)
                continue
            if lines:
                reports.setdefault(author, Report(author)).lines.extend(lines)
        for report in reports.values():
            await self._tell(report)
        return list(reports.values())

    async def _group(self, group: list[Memory]) -> list[str]:
        shown = [{"id": m.id, "content": m.content, "saved": _day(m.created_at)} for m in group]
        messages = [
            {"role": "system", "content": PROMPT},
            {"role": "user", "content": json.dumps(shown, ensure_ascii=False)},
        ]
        plan = parse_plan(await self.complete(messages))
        by_id, used, lines = {m.id: m for m in group}, set[str](), []
        for merge in plan.get("merge") or []:
            ids = [i for i in dict.fromkeys(merge.get("ids") or []) if i in by_id and i not in used]
            content = " ".join(str(merge.get("content") or "").split())
            if (
                len(ids) < 2
                or not content
                or len(content) > sum(len(by_id[i].content) for i in ids)
            ):
                continue  # a merge that says more than its parts is not a merge
            used.update(ids)
            merged = _merged([by_id[i] for i in ids], content)
            await self.store.supersede(ids, merged)
            was = " + ".join(f"«{by_id[i].content}»" for i in ids)
            lines.append(
                f"merged {was} → «{content}» [{merged.id}] (undo: /memory undo {merged.id})"
            )
        for drop in plan.get("drop") or []:
            old = by_id.get(str(drop.get("id") or "")) if isinstance(drop, dict) else None
            if old is None or old.id in used:
                continue
            used.add(old.id)
            await self.store.supersede([old.id], None)
            lines.append(f"dropped «{old.content}», contradicted (undo: /memory undo {old.id})")
        return lines

    async def _tell(self, report: Report) -> None:
        if self.notify is None:
            return
        text = "🧠 Memory tidy-up: what changed in what I remember for you\n" + "\n".join(
            f"- {line}" for line in report.lines
        )
        try:
            await self.notify(report.person, text)
        except Exception:  # the pass is done either way; the card is a courtesy
            log.warning("memory_card_failed", exc_info=True)


def _merged(parts: list[Memory], content: str) -> Memory:
    """The new version: the group's author, the worst trust of its parts."""
    first = parts[0]
    return replace(
        first,
        id=new_id(),
        content=content,
        terms=" ".join(words(content)),
        untrusted=any(m.untrusted for m in parts),
        author_owner=all(m.author_owner for m in parts),
        pinned=any(m.pinned for m in parts),
        created_at=time.time(),
    )


def _day(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M")

"""ARIA snapshots as the model sees them: refs tagged with their snapshot, capped, filtered.

Playwright's AI snapshot (`page.aria_snapshot(mode="ai")`) names elements `e12` (`f1e3`
inside iframes) and restarts the numbering on every new document, so the same ref can mean
another element after a navigation. Each snapshot we take gets a process-unique number `N`
and its refs are shown as `sNe12`: a ref names the one snapshot it came from, and only refs of
a tab's latest snapshot are accepted (Chrome DevTools MCP prefixes its uids the same way).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SNAPSHOT_LIMIT = 6500  # leaves room for url, title and notes under the 8,000-character result cap
REF_PATTERN = re.compile(r"^s(\d+)((?:f\d+)?e\d+)$")
_RAW_REF = re.compile(r"\[ref=((?:f\d+)?e\d+)\]")
_ATTRS = re.compile(r" \[(?:ref|cursor|active)[^\]]*\]")
INTERACTIVE_ROLES = frozenset(
    {
        "button", "link", "textbox", "searchbox", "combobox", "listbox", "option", "checkbox",
        "radio", "switch", "slider", "spinbutton", "tab", "menuitem", "menuitemcheckbox",
        "menuitemradio", "treeitem",
    }
)  # fmt: skip


@dataclass
class Snapshot:
    """One snapshot of one tab: its number, the text shown, and what each ref names."""

    number: int
    url: str
    text: str
    labels: dict[str, str] = field(default_factory=dict)  # Playwright ref -> `button "Save"`
    title: str = ""  # the page title when the snapshot was taken


def _label(line: str) -> str:
    text = _ATTRS.sub("", line.strip().removeprefix("- "))
    return text.rstrip(":").strip()[:120]


def tag_refs(raw: str, number: int, url: str) -> Snapshot:
    """Rewrite `[ref=e12]` to `[ref=sNe12]` and remember each ref's role and name."""
    labels: dict[str, str] = {}
    lines = []
    for line in raw.splitlines():
        found = _RAW_REF.search(line)
        if found:
            labels[found.group(1)] = _label(line)
            line = _RAW_REF.sub(lambda m: f"[ref=s{number}{m.group(1)}]", line)
        lines.append(line)
    return Snapshot(number, url, "\n".join(lines), labels)


def parse_ref(ref: str) -> tuple[int, str] | None:
    """(snapshot number, Playwright ref) of `sNe12`, or None when it is not a ref."""
    found = REF_PATTERN.match(ref.strip())
    return (int(found.group(1)), found.group(2)) if found else None


def interactive_only(text: str) -> str:
    """A flat list of the elements one can act on (buttons, links, fields, options…)."""
    kept = []
    for line in text.splitlines():
        body = line.strip().removeprefix("- ")
        role = body.split(" ", 1)[0].rstrip(":")
        if role in INTERACTIVE_ROLES and "[ref=" in body:
            kept.append("- " + body.rstrip(":"))
    return "\n".join(kept) or "(no interactive elements)"


def find_lines(text: str, query: str, limit: int = 40) -> list[str]:
    """Snapshot lines containing `query` (case-insensitive), outermost indentation removed."""
    needle = query.casefold()
    hits = [line.strip() for line in text.splitlines() if needle in line.casefold()]
    return hits[:limit]


def cap_snapshot(text: str, limit: int = SNAPSHOT_LIMIT) -> str:
    """At most `limit` characters, cut at a line end, with a marker saying how to see more."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    cut = cut if cut > limit // 2 else limit
    return (
        f"{text[:cut]}\n[… snapshot truncated: showing {cut:,} of {len(text):,} characters; use "
        "action=find with a text, snapshot with interactive_only=true or a smaller depth, or "
        "scroll]"
    )

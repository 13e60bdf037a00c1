"""Lark links and bare tokens → what they point at (docx, wiki node, sheet, base, legacy doc).

Links are matched on their path segment, not their host (tenant hosts vary: `<t>.feishu.cn`,
`<t>.larksuite.com`, `*.larkoffice.com`); `?table=`, `?view=` and `?sheet=` are kept, `#…` is
dropped (reference §2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal
from urllib.parse import parse_qs, urlsplit

Kind = Literal["docx", "doc", "wiki", "sheet", "bitable", "file", "folder"]

_SEGMENTS: dict[str, Kind] = {
    "docx": "docx",
    "docs": "doc",
    "wiki": "wiki",
    "sheets": "sheet",
    "base": "bitable",
    "file": "file",
}
# wiki nodes' obj_type names → ours
OBJ_TYPES: dict[str, Kind] = {
    "docx": "docx",
    "doc": "doc",
    "sheet": "sheet",
    "bitable": "bitable",
    "file": "file",
}
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
# a Lark document link anywhere in a message (what opens lark_doc_read without find_tools)
LINK_IN_TEXT = re.compile(
    r"https?://[\w.-]+\.(?:feishu\.cn|larksuite\.com|larkoffice\.com|feishu-pre\.cn)"
    r"/(?:docx|docs|wiki|sheets|base)/[A-Za-z0-9_-]{8,}",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Target:
    """One object: its kind and token, plus the table/view/sheet a link names."""

    kind: Kind
    token: str
    table: str = ""
    view: str = ""
    sheet: str = ""
    title: str = ""

    def resolved(self, kind: Kind, token: str, title: str = "") -> Target:
        """The same link's query values on the object a wiki node points at."""
        return replace(self, kind=kind, token=token, title=title or self.title)


class LinkError(ValueError):
    """Not a Lark link or token the tools understand."""


def has_doc_link(text: str) -> bool:
    """Whether `text` holds a Lark document, wiki, sheet or base link."""
    return bool(LINK_IN_TEXT.search(text or ""))


def parse(link: str, default: Kind = "docx") -> Target:
    """A Target for a link (any Lark host) or a bare token (taken as `default`)."""
    text = (link or "").strip().strip("<>")
    if not text:
        raise LinkError("no link given: pass a Lark document URL or token")
    if _TOKEN.match(text):
        return Target(default, text)
    parts = urlsplit(text if "://" in text else f"https://{text}")
    segments = [s for s in parts.path.split("/") if s]
    query = {k: v[0] for k, v in parse_qs(parts.query).items() if v}
    extra = {"table": query.get("table", ""), "view": query.get("view", "")}
    for i, segment in enumerate(segments[:-1]):
        if segment == "drive" and segments[i + 1] == "folder" and i + 2 < len(segments):
            return Target("folder", segments[i + 2])
        kind = _SEGMENTS.get(segment)
        if kind is None or segments[i + 1] == "settings":
            continue
        token = segments[i + 1]
        if not _TOKEN.match(token):
            break
        return Target(kind, token, sheet=query.get("sheet", ""), **extra)
    raise LinkError(
        f"{link[:120]!r} is not a Lark document link: expected …/docx/…, /wiki/…, /sheets/…, "
        "/base/… (feishu.cn or larksuite.com) or a bare document token"
    )

"""Blocking read/add/edit of one entry (run in a worker thread by the KnowledgeBase)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Literal

from larkbot.knowledge.notes import (
    KnowledgeError,
    Note,
    atomic_write,
    create_new,
    entry_file_lock,
    normalize_tags,
    now_iso,
    parse_note,
    render_note,
    slugify,
)

Mode = Literal["append", "replace"]


def read_entry(path: Path) -> Note:
    """The note stored at `path` (already resolved inside the knowledge directory)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KnowledgeError(
            f"no knowledge entry at {path}; use knowledge_search to find its source"
        ) from None
    except IsADirectoryError:
        raise KnowledgeError(f"{path} is a directory, not a knowledge entry") from None
    except UnicodeDecodeError:
        raise KnowledgeError(f"{path} is not UTF-8 text") from None
    note = parse_note(text, path.stem)
    if not note.created:
        stamp = dt.datetime.fromtimestamp(path.stat().st_mtime).astimezone()
        note.created = stamp.isoformat(timespec="seconds")
    return note


def add_entry(root: Path, content: str, title: str, tags: list[str] | str | None) -> Path:
    """Write a new entry under `root`; the file name is a slug of the title, never reused."""
    body = content.strip("\n")
    title = " ".join(title.split()) or _first_line(body)
    if not title:
        raise KnowledgeError("knowledge_add needs a title or some content")
    stamp = now_iso()
    note = Note(
        title=title, tags=normalize_tags(tags or []), body=body, created=stamp, updated=stamp
    )
    root.mkdir(parents=True, exist_ok=True)
    return create_new(root, slugify(title), render_note(note))


def edit_entry(
    root: Path,
    path: Path,
    rel: str,
    content: str,
    mode: Mode,
    title: str | None,
    tags: list[str] | str | None,
) -> Note:
    """Append to or replace the body of an entry under a cross-process lock; returns it."""
    if mode not in ("append", "replace"):
        raise KnowledgeError(f"mode must be 'append' or 'replace', not {mode!r}")
    with entry_file_lock(root, rel):
        note = read_entry(path)
        addition = content.strip("\n")
        if mode == "replace":
            note.body = addition
        elif addition:
            note.body = f"{note.body.rstrip()}\n\n{addition}" if note.body.strip() else addition
        if title and title.strip():
            note.title = " ".join(title.split())
        if tags is not None:
            note.tags = normalize_tags(tags)
        note.updated = now_iso()
        atomic_write(path, render_note(note))
    return note


def _first_line(body: str) -> str:
    for line in body.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text[:60]
    return ""

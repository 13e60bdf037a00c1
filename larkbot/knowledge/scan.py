"""Listing the knowledge directory cheaply and diffing it against the index."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from larkbot.knowledge.index import Doc
from larkbot.knowledge.notes import parse_note

Signature = tuple[int, int]  # (mtime_ns, size)


@dataclass
class Listing:
    """Every visible note (relative POSIX path -> signature) and every directory's mtime."""

    files: dict[str, Signature] = field(default_factory=dict)
    dirs: dict[str, int] = field(default_factory=dict)
    newest_ns: int = 0


def list_notes(root: Path) -> Listing:
    """Walk `root` for *.md files; hidden names and symlinks are skipped (never followed)."""
    out = Listing()
    if not root.is_dir():
        return out
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        path = os.path.join(root, rel_dir) if rel_dir else str(root)
        try:
            out.dirs[rel_dir] = os.stat(path).st_mtime_ns
            entries = list(os.scandir(path))
        except OSError:
            continue
        for e in entries:
            if e.name.startswith(".") or e.is_symlink():
                continue
            rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
            if e.is_dir():
                stack.append(rel)
            elif e.name.endswith(".md") and e.is_file():
                try:
                    st = e.stat()
                except OSError:
                    continue  # deleted between listing and stat
                out.files[rel] = (st.st_mtime_ns, st.st_size)
                out.newest_ns = max(out.newest_ns, st.st_mtime_ns)
    out.newest_ns = max([out.newest_ns, *out.dirs.values()])
    return out


def dirs_changed(root: Path, dirs: dict[str, int]) -> bool:
    """True when any known directory's mtime moved (a file was added, removed or renamed)."""
    for rel_dir, mtime in dirs.items():
        try:
            if os.stat(os.path.join(root, rel_dir)).st_mtime_ns != mtime:
                return True
        except OSError:
            return True
    return not dirs


def load_doc(root: Path, rel: str, sig: Signature) -> Doc | None:
    """Read and parse one note for indexing; None if it vanished or is not UTF-8 text."""
    try:
        text = (root / rel).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    note = parse_note(text, Path(rel).stem)
    digest = hashlib.sha1(f"{note.title}\0{note.tags}\0{note.body}".encode()).hexdigest()
    return Doc(rel, sig[0], sig[1], note.title, tuple(note.tags), note.body, digest)

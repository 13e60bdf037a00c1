"""The values stored under `$LARKBOT_HOME/.secrets/`, for the scrubber to redact like settings.

A file there holds one value (`get_secret`'s layout), or several in lines of `KEY=value`,
`key: value` or JSON (app credentials saved by `larkbot setup`): the whole text, each line and
each value count. Read again only when a file in the directory changes (the scrubber looks at
the folder each time, at each file at most every second).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any

MAX_FILES = 200
MAX_FILE_BYTES = 64 * 1024
_PAIR = re.compile(r"""^\s*["']?[\w.-]+["']?\s*[:=]\s*(.+?)\s*,?\s*$""")

Signature = tuple[tuple[str, int, int], ...]


def signature(secrets_dir: Path) -> Signature:
    """(name, size, mtime) of each file: what must change for the values to be read again."""
    try:
        entries = sorted(os.scandir(secrets_dir), key=lambda e: e.name)[:MAX_FILES]
    except OSError:
        return ()
    out = []
    for entry in entries:
        try:
            st = entry.stat()
        except OSError:
            continue
        out.append((entry.name, st.st_size, st.st_mtime_ns))
    return tuple(out)


def stored_values(secrets_dir: Path, min_chars: int) -> dict[str, str]:
    """Each value found in the directory's files → `.secrets/<file>` (what a marker names)."""
    found: dict[str, str] = {}
    for name, size, _ in signature(secrets_dir):
        path = secrets_dir / name
        if size > MAX_FILE_BYTES or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for value in _values(text):
            if len(value) >= min_chars:
                found.setdefault(value, f".secrets/{name}")
    return found


def _values(text: str) -> list[str]:
    """The whole text, each line, each `key = value` value and each JSON string in it."""
    values = [text.strip()]
    for line in text.splitlines():
        values.append(line.strip())
        pair = _PAIR.match(line)
        if pair:
            values.append(pair.group(1).strip("\"'"))
    with contextlib.suppress(ValueError):
        values += _json_strings(json.loads(text))
    return values


def _json_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _json_strings(v)]
    return []

"""The extraction worker process: reads framed requests, answers (title, text).

A request is two frames (8-byte big-endian length, then bytes): a small JSON header
(`mode`, `url`) and the page as UTF-8; the answer is two frames, title and text. Raw frames,
not JSON, because encoding megabytes as JSON holds the parent's GIL for a long time.

Run as `python -m tools.web.extract_worker` by `tools.web.extract_pool`; a request that takes
longer than its budget gets the whole process killed, which no thread could do to trafilatura.
"""

from __future__ import annotations

import json
import sys

from tools.web.extract import find_title, readable_text, regex_text


def _read(stream: object, n: int) -> bytes:
    data = stream.read(n)  # type: ignore[attr-defined]
    if len(data) < n:
        raise EOFError
    return bytes(data)


def _frame(stream: object) -> bytes:
    return _read(stream, int.from_bytes(_read(stream, 8), "big"))


def main() -> None:
    """Serve requests until stdin closes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            request = json.loads(_frame(stdin))
            html = _frame(stdin).decode("utf-8", "replace")
        except EOFError:
            return
        url = request.get("url")
        if request.get("mode") == "regex":
            title, text = find_title(html), regex_text(html)
        else:
            title, text = readable_text(html, url)
        for part in (title, text):
            data = part.encode("utf-8", "replace")
            stdout.write(len(data).to_bytes(8, "big") + data)
        stdout.flush()


if __name__ == "__main__":
    main()

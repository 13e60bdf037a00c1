"""The extraction worker process: reads length-prefixed JSON requests, answers (title, text).

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


def main() -> None:
    """Serve requests until stdin closes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            size = int.from_bytes(_read(stdin, 8), "big")
            request = json.loads(_read(stdin, size))
        except EOFError:
            return
        html, url = str(request["html"]), request.get("url")
        if request.get("mode") == "regex":
            title, text = find_title(html), regex_text(html)
        else:
            title, text = readable_text(html, url)
        answer = json.dumps({"title": title, "text": text}).encode()
        stdout.write(len(answer).to_bytes(8, "big") + answer)
        stdout.flush()


if __name__ == "__main__":
    main()

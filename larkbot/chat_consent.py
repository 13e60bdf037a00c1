"""The terminal's consent: y/N at the prompt, read off the event loop (`larkbot chat`)."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from larkbot.consent import ConsentAnswer, ConsentRequest
from larkbot.terminal import read_line


class TuiConsentProvider:
    """y/N in the terminal, read off the event loop (works with piped stdin; end of input = no)."""

    def __init__(self, out: Any = None) -> None:
        self._out = out
        self._lock = asyncio.Lock()  # one question at a time on one terminal

    async def present(self, request: ConsentRequest) -> ConsentAnswer:
        """Print what the call does and read y/N; a yes holds for the session (unless always)."""
        out = self._out or sys.stdout
        if request.always:
            note = " (asked every time)"
        else:
            note = f" (y also allows {request.scope} for the rest of this session)"
        async with self._lock:
            print(f"\n⚠ {request.tool.name}: {request.description}{note}", file=out, flush=True)
            answer = await read_line("Allow? [y/N] ")
        if answer is None:
            return ConsentAnswer(False, "no answer (end of input): the user did not allow it")
        if answer.strip().lower() in ("y", "yes"):
            return ConsentAnswer(True, "allowed by the user", for_session=not request.always)
        return ConsentAnswer(False, "the user declined")

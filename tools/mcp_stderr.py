"""An MCP stdio server's stderr, line by line, into the structured log (not raw onto ours)."""

from __future__ import annotations

import os
import threading
from typing import TextIO

from larkbot.logs import get_logger

log = get_logger("tools.mcp")
MAX_LINE = 500


class StderrToLog:
    """A pipe: hand `writer` to the child as its stderr; a daemon thread logs what arrives."""

    def __init__(self, server: str) -> None:
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "r", errors="replace")
        self._server = server
        self._thread = threading.Thread(target=self._pump, name=f"mcp-stderr:{server}", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        with self._reader:
            for line in self._reader:  # ends at EOF: every copy of the write end closed
                text = line.rstrip()
                if text:
                    log.info("mcp_server_stderr", server=self._server, line=text[:MAX_LINE])

    def close(self) -> None:
        """Close our copy of the write end (the thread ends when the child's closes too)."""
        self.writer.close()

    def join(self, timeout: float) -> bool:
        """Wait (bounded) until every line was logged; True when the reader ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

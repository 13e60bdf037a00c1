"""How much memory the browser uses: PSS of this process's Chromium and driver descendants."""

from __future__ import annotations

import os
from pathlib import Path

_PROC = Path("/proc")
_BROWSER_WORDS = ("chrom", "playwright", "node")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited while we looked
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _pss_kib(pid: int) -> int:
    try:
        for line in (_PROC / str(pid) / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _is_browser(pid: int) -> bool:
    try:
        cmd = (_PROC / str(pid) / "cmdline").read_bytes()[:400].decode(errors="replace").lower()
    except OSError:
        return False
    return any(word in cmd for word in _BROWSER_WORDS)


def browser_pss_bytes(root: int | None = None) -> int:
    """Proportional set size of the browser processes below `root` (default: this process)."""
    if not _PROC.is_dir():
        return 0
    tree = _children()
    total, stack = 0, list(tree.get(root or os.getpid(), []))
    while stack:
        pid = stack.pop()
        stack += tree.get(pid, [])
        if _is_browser(pid):
            total += _pss_kib(pid)
    return total * 1024

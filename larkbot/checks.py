"""The doctor's report line, on the ground floor so every subsystem's check can return one.

It imports nothing of the project: a check in `lark/`, `providers/`, `scheduler/` or `tools/`
depends on this type, never on the doctor that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckResult:
    """One line of the report: what was checked, whether it is fine, and how to fix it if not."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    skipped: bool = False  # not checked (what it needs failed, see that line): shown "–"

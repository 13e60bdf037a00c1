"""The bot's own secrets never reach the model or the history: tool text is scrubbed of them.

A shell `cat /proc/$PPID/environ`, a config file read, an MCP server echoing its env: whatever
path a secret takes into a tool result or a tool call's arguments, its value is replaced by
`[redacted: <what>]` before the model or storage sees it. The values are the running
settings' (app secret, LLM key, encrypt key, verification token, web token, search and
embeddings keys, database and Redis passwords), so a rotated key is covered at once, and
those stored under `$LARKBOT_HOME/.secrets/` (policy/secret_files.py).
"""

from __future__ import annotations

import ctypes
import sys
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from larkbot.config import Settings
from larkbot.policy.secret_files import Signature, signature, stored_values

MIN_SECRET_CHARS = 8  # shorter values ("secret", "admin") would redact ordinary words
RESCAN_SECONDS = 1.0


def _password(url: str) -> str:
    try:
        return urlsplit(url).password or ""
    except ValueError:
        return ""


def bot_secrets(settings: Settings) -> dict[str, str]:
    """What each secret is called on a redaction marker → its current value (non-empty only)."""
    found = {
        "lark.app_secret": settings.lark.app_secret.get_secret_value(),
        "lark.encrypt_key": settings.lark.encrypt_key.get_secret_value(),
        "lark.verification_token": settings.lark.verification_token.get_secret_value(),
        "llm.api_key": settings.llm.api_key.get_secret_value(),
        "web.token": settings.web.token.get_secret_value(),
        "tools.web_search.api_key": settings.tools.web_search.api_key.get_secret_value(),
        "knowledge.embeddings.api_key": settings.knowledge.embeddings.api_key.get_secret_value(),
        "storage.url password": _password(settings.storage.url),
        "storage.redis_url password": _password(settings.storage.redis_url),
    }
    return {name: value for name, value in found.items() if len(value) >= MIN_SECRET_CHARS}


class SecretScrubber:
    """Replaces the bot's secret values in text and in (nested) tool arguments.

    The values are the settings' and those stored under `$LARKBOT_HOME/.secrets/` (a command
    that reads a copy of one there prints it like any other output).
    """

    def __init__(self, settings: Callable[[], Settings]) -> None:
        self._settings = settings
        self._cached: tuple[Settings | None, Signature, list[tuple[str, str]]] = (None, (), [])
        self._look_again = (0.0, 0)  # when to stat every .secrets/ file again; the dir's mtime

    def _files(self, settings: Settings) -> Signature:
        """The `.secrets/` signature: every file is stat'ed at most every RESCAN_SECONDS (the
        scrubber runs on each log line), the folder itself each time (a file added, removed or
        replaced shows at once)."""
        try:
            folder = settings.secrets_dir.stat().st_mtime_ns
        except OSError:
            folder = 0
        now = time.monotonic()
        due, seen = self._look_again
        if self._cached[0] is settings and folder == seen and now < due:
            return self._cached[1]
        self._look_again = (now + RESCAN_SECONDS, folder)
        return signature(settings.secrets_dir)

    def _pairs(self, stored: bool = True) -> list[tuple[str, str]]:
        settings = self._settings()
        files = self._files(settings)
        cached, cached_files, _ = self._cached
        if cached is not settings or cached_files != files:  # per settings and .secrets/ change
            found = stored_values(settings.secrets_dir, MIN_SECRET_CHARS)
            found.update({v: n for n, v in bot_secrets(settings).items()})
            # longest first: a key that contains another is replaced whole
            pairs = sorted(found.items(), key=lambda p: -len(p[0]))
            self._cached = (settings, files, pairs)
        pairs = self._cached[2]
        return pairs if stored else [p for p in pairs if not p[1].startswith(".secrets/")]

    def text(self, value: str, stored: bool = True) -> str:
        """`value` with every secret replaced by a marker naming it; `stored=False` keeps the
        values of `.secrets/` (get_secret's answer, which the owner approved, is one)."""
        return _replace(value, self._pairs(stored))

    def arguments(self, value: Any) -> Any:
        """A copy of JSON-like `value` with every string scrubbed."""
        return _replace_all(value, self._pairs())


def _replace(value: str, pairs: list[tuple[str, str]]) -> str:
    for secret, name in pairs:
        if secret in value:
            value = value.replace(secret, f"[redacted: {name}]")
    return value


def _replace_all(value: Any, pairs: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        return _replace(value, pairs)
    if isinstance(value, dict):
        return {k: _replace_all(v, pairs) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_all(v, pairs) for v in value]
    return value


PR_SET_DUMPABLE, PR_GET_DUMPABLE = 4, 3


def make_undumpable() -> bool:
    """prctl(PR_SET_DUMPABLE, 0): a same-user process (a tool's child) cannot read this
    process's memory or `/proc/<pid>/environ` (the keys). True when it took effect (Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def is_dumpable() -> bool:
    """The process's current dumpable flag (False off Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    return int(ctypes.CDLL(None).prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)) == 1

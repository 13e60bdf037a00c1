"""GetSecretTool: read one secret from $LARKBOT_HOME/.secrets/<name>, with consent every time."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from larkbot.context import RequestContext
from larkbot.logs import get_logger
from tools.base import BaseTool, ContextTool, ToolResult
from tools.builtin._paths import inside
from tools.runtime import ToolRuntime

log = get_logger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
MAX_SECRET_BYTES = 64 * 1024


def secret_path(secrets_dir: Path, name: str) -> Path | str:
    """The secret's resolved path, or why `name` is refused (escapes, odd names, symlinks out)."""
    if not _NAME.match(name) or ".." in name:
        return "a secret name is a plain file name (letters, digits, '_', '-', '.'), no paths"
    root = secrets_dir.expanduser().resolve(strict=False)
    target = (root / name).resolve(strict=False)
    if not inside(target, root) or target == root:
        return "that name points outside the secrets directory"
    return target


def _read(path: Path) -> str:
    if path.stat().st_size > MAX_SECRET_BYTES:
        raise ValueError("secret file too large")
    return path.read_text(encoding="utf-8").rstrip("\r\n")


class GetSecretTool(ContextTool):
    """Returns a secret's value to the model; asked every time, never logged."""

    name = "get_secret"
    description = (
        "Read a secret (API key, password) the owner stored in $LARKBOT_HOME/.secrets/<name>. "
        "The owner is asked every time. Never repeat the value to the user."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"name": {"type": "string", "description": "Secret file name, e.g. github"}},
        "required": ["name"],
    }
    private_data = True
    no_compress = True  # the value must reach the model verbatim
    returns_stored_secret = True  # so the scrubber lets `.secrets/` values through, here only

    def __init__(self, rt: ToolRuntime) -> None:
        self.rt = rt

    def consent_check(self, **kw: Any) -> str | None:
        """Every read is asked."""
        return f"read secret '{kw.get('name', '')}'"

    def consent_always(self, **kw: Any) -> bool:
        """Asked every time, never remembered."""
        return True

    async def run_with(self, ctx: RequestContext, **kw: Any) -> ToolResult:
        """Refuse non-owners and bad names; read the file off the loop; log only the name."""
        name = str(kw["name"])
        if not ctx.is_owner:  # the policy refuses first; this guards direct callers too
            return ToolResult("Error: only the bot's owner may read secrets", is_error=True)
        found = secret_path(self.rt.live.get().secrets_dir, name)
        if isinstance(found, str):
            return ToolResult(f"Error: {found}", is_error=True)
        if not found.is_file():
            available = await asyncio.to_thread(self._names)
            return ToolResult(f"Error: no secret '{name}'. Stored: {available}", is_error=True)
        try:
            value = await asyncio.to_thread(_read, found)
        except (OSError, ValueError) as err:
            return ToolResult(f"Error: cannot read secret '{name}': {err}", is_error=True)
        log.info("secret_read", name=name)  # the name only, never the value
        return ToolResult(value)

    def _names(self) -> str:
        root = self.rt.live.get().secrets_dir
        names = sorted(p.name for p in root.iterdir() if p.is_file()) if root.is_dir() else []
        return ", ".join(names[:50]) or "none"


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The get_secret tool."""
    return [GetSecretTool(rt)]

"""Run the official `lark-cli` binary and turn its JSON (or its errors) into Python data."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from typing import Any

from larkbot.config import LarkCliConfig

INSTALL_HINT = (
    "lark-cli is not installed or not on PATH. Install it with `npm install -g @larksuite/cli`, "
    "then run `lark-cli config init` and `lark-cli auth login --domain calendar,im` "
    "(or set tools.lark_cli.binary to its path)."
)
# lark-cli's documented exit codes
_EXIT_KINDS = {
    1: "API error",
    2: "invalid arguments",
    3: "authorisation",
    4: "network",
    5: "internal",
}
_MAX_OUTPUT = 2 * 1024 * 1024
_MAX_STDERR = 64 * 1024


async def _read_capped(stream: asyncio.StreamReader, limit: int) -> bytes:
    """Read a pipe to its end (so the child never blocks on it), keeping the first `limit` bytes."""
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < limit:
            kept += chunk[: limit - len(kept)]
    return bytes(kept)


class LarkCliError(Exception):
    """lark-cli failed; the message is meant for the model (and passes the CLI's own text)."""


def _describe_failure(code: int, stdout: bytes, stderr: bytes) -> str:
    kind = _EXIT_KINDS.get(code, f"exit code {code}")
    for raw in (stderr, stdout):
        try:
            payload = json.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        err = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(err, dict):
            parts = [str(err.get("message") or err.get("type") or "unknown error")]
            if err.get("hint"):
                parts.append(f"hint: {err['hint']}")
            text = "; ".join(parts)
            break
    else:
        text = (stderr or stdout).decode("utf-8", "replace").strip()[:1000] or "no output"
    message = f"lark-cli failed ({kind}): {text}"
    if code == 3:
        message += (
            " — the user authorisation is missing or expired: the owner must run "
            "`lark-cli auth login --domain calendar,im` on the bot's machine."
        )
    return message


async def run_lark_cli(args: list[str], config: LarkCliConfig) -> Any:
    """Run `lark-cli ARGS --format json`; return the parsed JSON or raise LarkCliError."""
    binary = shutil.which(config.binary)
    if binary is None and os.path.isfile(config.binary):
        binary = config.binary
    if binary is None:
        raise LarkCliError(INSTALL_HINT)
    proc = await asyncio.create_subprocess_exec(
        binary,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        async with asyncio.timeout(config.timeout_seconds):
            stdout, stderr, _ = await asyncio.gather(
                _read_capped(proc.stdout, _MAX_OUTPUT),
                _read_capped(proc.stderr, _MAX_STDERR),
                proc.wait(),
            )
    except TimeoutError:
        raise LarkCliError(
            f"lark-cli timed out after {config.timeout_seconds:g} s ({' '.join(args[:3])} …)"
        ) from None
    finally:
        if proc.returncode is None:  # timed out or cancelled: never leave it running
            proc.kill()
            await proc.wait()
    if proc.returncode != 0:
        raise LarkCliError(_describe_failure(proc.returncode or 0, stdout, stderr))
    try:
        data = json.loads(stdout.decode("utf-8", "replace"))
    except ValueError:
        shown = stdout[:300].decode("utf-8", "replace").strip()
        raise LarkCliError(f"lark-cli printed something that is not JSON: {shown!r}") from None
    if isinstance(data, dict) and data.get("ok") is False:
        raise LarkCliError(_describe_failure(1, stdout, b""))
    if isinstance(data, dict) and isinstance(data.get("code"), int) and data["code"] != 0:
        raise LarkCliError(f"lark-cli: Lark API error {data['code']}: {data.get('msg', '')}")
    return data

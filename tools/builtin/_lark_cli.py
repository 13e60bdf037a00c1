"""Run the official `lark-cli` binary and turn its JSON (or its errors) into Python data."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
from typing import Any

from larkbot.config import LarkCliConfig
from tools.builtin._process import signal_group

INSTALL_HINT = (
    "lark-cli is not installed or not on PATH. Install it with `npm install -g @larksuite/cli`, "
    "then run `lark-cli config init` and `lark-cli auth login --domain calendar,im` "
    "(or set tools.lark_cli.binary to its path)."
)
# lark-cli's documented exit codes (internal/output): what each means for the user
_EXIT_KINDS = {
    1: "the Lark API refused the call",
    2: "validation: bad arguments, or lark-cli is not configured",
    3: "authorisation",
    4: "network",
    5: "internal error of lark-cli",
}
CONFIG_HINT = (
    " — lark-cli has no app configured on the bot's machine: run `lark-cli config init`, "
    "then `lark-cli auth login --domain calendar,im`."
)
VERSION_TIMEOUT = 10.0
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_versions: dict[str, tuple[int, int, int] | None] = {}  # binary path → version, asked once
KILL_WAIT = 5.0
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
    if code == 2 and re.search(r"not configured|config init|no app", text, re.IGNORECASE):
        message += CONFIG_HINT
    if code == 3:
        message += (
            " — the user authorisation is missing or expired: the owner must run "
            "`lark-cli auth login --domain calendar,im` on the bot's machine."
        )
    return message


def find_binary(config: LarkCliConfig) -> str:
    """The lark-cli executable, or LarkCliError with how to install it."""
    binary = shutil.which(config.binary)
    if binary is None and os.path.isfile(config.binary):
        binary = config.binary
    if binary is None:
        raise LarkCliError(INSTALL_HINT)
    return binary


async def _run(binary: str, args: list[str], timeout: float) -> tuple[int, bytes, bytes]:
    """Run in its own process group; on timeout or cancel the WHOLE group is killed.

    The npm package's `lark-cli` is a node wrapper whose child is the real binary: killing
    only the wrapper left the child holding the pipes, so the call hung until it finished.
    """
    proc = await asyncio.create_subprocess_exec(
        binary,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    done = False
    try:
        async with asyncio.timeout(timeout):
            stdout, stderr, _ = await asyncio.gather(
                _read_capped(proc.stdout, _MAX_OUTPUT),
                _read_capped(proc.stderr, _MAX_STDERR),
                proc.wait(),
            )
        done = True
    except TimeoutError:
        raise LarkCliError(
            f"lark-cli timed out after {timeout:g} s ({' '.join(args[:3])} …)"
        ) from None
    finally:
        if not done:  # timed out or cancelled: never leave it (or its children) running
            signal_group(proc.pid, signal.SIGKILL)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), KILL_WAIT)
    return proc.returncode or 0, stdout, stderr


async def cli_version(config: LarkCliConfig) -> tuple[int, int, int] | None:
    """lark-cli's version (`lark-cli --version`), asked once per binary; None if unknown."""
    binary = find_binary(config)
    if binary not in _versions:
        try:
            code, out, err = await _run(binary, ["--version"], VERSION_TIMEOUT)
            found = _VERSION.search((out + err).decode("utf-8", "replace")) if code == 0 else None
        except LarkCliError:
            found = None
        _versions[binary] = (
            (int(found[1]), int(found[2]), int(found[3])) if found is not None else None
        )
    return _versions[binary]


async def run_lark_cli(args: list[str], config: LarkCliConfig) -> Any:
    """Run `lark-cli ARGS`; return the parsed JSON output or raise LarkCliError."""
    binary = find_binary(config)
    code, stdout, stderr = await _run(binary, args, config.timeout_seconds)
    if code != 0:
        raise LarkCliError(_describe_failure(code, stdout, stderr))
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

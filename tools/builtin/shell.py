"""ShellTool: bash in its own session (and cgroup), bounded output; nothing outlives the call.

On timeout or cancel every process of the call is killed; background jobs still running when
the shell exits are killed too and reported in the result. Commands see only an allow-listed
environment.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from larkbot.logs import get_logger
from tools.base import BaseTool, ToolResult
from tools.builtin._fetched import FetchedFiles, shell_sources
from tools.builtin._process import (
    DRAIN_AFTER_EXIT,
    BoundedCapture,
    OutputProtocol,
    shell_environment,
    stop_group,
)
from tools.builtin._process_tree import CallProcesses, Leftover
from tools.builtin._sandbox import bwrap_argv, probe
from tools.runtime import ToolRuntime

try:
    from tools.builtin._shell_danger import classify as _classify

    classify: Callable[[str], str | None] = _classify
except ImportError:  # no tree-sitter: fail closed, every command is asked every time

    def classify(command: str) -> str | None:
        """Without the parser nothing can be judged safe."""
        return "the shell classifier is unavailable (tree-sitter missing)"


log = get_logger(__name__)
_warned: set[str] = set()

# Syntax bash and dash read differently: under dash `x &>f rm -rf /` backgrounds `x`, then runs
# rm, and `((rm -rf /))` is two subshells, while bash's grammar (the classifier's) sees neither.
_DASH_DIVERGES = ("&>", "((", "|&", "$'", "<(", ">(")


def bash_path() -> str | None:
    """The bash the tool runs commands with, so execution matches the classifier's grammar."""
    return shutil.which("bash")


def danger(command: str, bash: bool = True) -> str | None:
    """Why `command` must be asked every time, or None; stricter when only /bin/sh exists."""
    reason = classify(command)
    if reason is None and not bash and any(t in command for t in _DASH_DIVERGES):
        return "bash-only syntax would be run by /bin/sh, which reads it differently"
    return reason


_PATHLIKE = re.compile(r"""[^\s'"<>|;&()`]+""")


def named_paths(command: str) -> list[str]:
    """Absolute or home paths a command names; any mention of `environ` counts as the bot's.

    Conservative on purpose: the policy asks every time when one reaches the bot's own files
    (`$LARKBOT_HOME`, `/proc/*/environ`); `/proc/$PPID/environ` is read as `/proc/self/...`.
    """
    paths = []
    for token in _PATHLIKE.findall(command):
        token = os.path.expandvars(token.split("=", 1)[-1]) if "=" in token else token
        token = os.path.expandvars(token)
        if token.startswith("/proc/"):
            token = re.sub(r"^/proc/[^/]+", "/proc/self", token)
        if token.startswith(("/", "~")) and "$" not in token:
            paths.append(token)
    if "environ" in command:
        paths.append("/proc/self/environ")
    return paths


class ShellTool(BaseTool):
    """Runs a shell command; dangerous commands (per the classifier) are asked every time."""

    name = "shell"
    description = (
        "Run a shell command (bash) on the owner's machine and return its combined "
        "stdout/stderr (capped at 8,000 characters) and exit code. Default timeout 30 s."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line to run."},
            "timeout": {
                "type": "number",
                "description": "Seconds before the command is killed (default 30).",
                "default": 30,
            },
        },
        "required": ["command"],
    }
    fast_path = True
    side_effect = True
    no_compress = True  # already bounded here; whitespace matters in code and tables

    def __init__(self, rt: ToolRuntime) -> None:
        self.rt = rt
        self.fetched: FetchedFiles = rt.services.setdefault("fetched_files", FetchedFiles())

    async def run(self, **kw: Any) -> ToolResult:
        """Run the command; output from the network or a received file is marked untrusted."""
        result = await self._run_command(**kw)
        command = str(kw.get("command", ""))
        found = shell_sources(command, named_paths(command), self.rt.home, self.fetched)
        return replace(result, sources=found) if found else result

    def consent_check(self, **kw: Any) -> str | None:
        """Every command needs consent; the description is the command itself."""
        command = str(kw.get("command", ""))
        reason = danger(command, bash_path() is not None)
        note = f" — DANGEROUS ({reason})" if reason else ""
        return f"run shell command: {command[:2000]}{note}"

    def consent_always(self, **kw: Any) -> bool:
        """Dangerous commands are asked every time and never remembered."""
        return danger(str(kw.get("command", "")), bash_path() is not None) is not None

    def _timeout(self, asked: Any) -> float:
        cap = self.rt.live.get().tools.shell.max_timeout_seconds
        value = float(asked) if isinstance(asked, int | float) and asked > 0 else 30.0
        return min(value, cap)

    def touched_paths(self, **kw: Any) -> list[str]:
        """Paths the command names (for the policy's protected-path rule), see `named_paths`."""
        return named_paths(str(kw.get("command", "")))

    async def _sandbox(self) -> list[str] | str:
        """The bwrap prefix for this call, [] to run unsandboxed, or why the call is refused."""
        settings = self.rt.live.get()
        mode = settings.tools.shell.sandbox
        if mode == "off":
            return []
        found = await asyncio.to_thread(probe)  # cached after the first call
        if not found.available:
            if mode == "bwrap":
                return f"tools.shell.sandbox is bwrap but {found.why_not}; nothing was run"
            if found.why_not not in _warned:  # once: doctor's line says it for good
                _warned.add(found.why_not)
                log.warning("shell_unsandboxed", reason=found.why_not)
            return []
        return await asyncio.to_thread(bwrap_argv, found.binary, settings)

    async def _run_command(self, **kw: Any) -> ToolResult:
        """Run the command; on exit, timeout or cancel kill every process the call started."""
        command, timeout = str(kw["command"]), self._timeout(kw.get("timeout", 30))
        cfg = self.rt.live.get().tools.shell
        wrapper = await self._sandbox()
        if isinstance(wrapper, str):
            return ToolResult(f"Error: {wrapper}", is_error=True)
        capture = BoundedCapture()
        procs = CallProcesses(use_cgroup=cfg.cgroup == "auto")
        argv = procs.argv(bash_path() or "/bin/sh", command, wrapper)
        # The protocol form of create_subprocess_exec: exit is seen even while children
        # started in the background keep the output pipe open.
        transport, proto = await asyncio.get_running_loop().subprocess_exec(
            lambda: OutputProtocol(capture),
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own session and process group
            env=procs.environment(shell_environment(cfg.env)),
        )
        procs.leader = transport.get_pid()
        timed_out, swept, leftovers, note = False, False, list[Leftover](), ""
        try:
            try:
                await asyncio.wait_for(asyncio.shield(proto.exited), timeout)
            except TimeoutError:
                timed_out = True
                await stop_group(procs.leader, proto.exited)
            leftovers = await asyncio.to_thread(procs.kill)
            swept = True
            done, _ = await asyncio.wait({proto.eof}, timeout=DRAIN_AFTER_EXIT)
            if not done:
                note = "[the output pipe stayed open after every process was killed]\n"
        finally:
            if not swept:
                procs.kill()  # cancelled: leave nothing running (a short /proc sweep, inline)
            procs.close()
            transport.close()
        if wrapper:  # the sandbox's own init (a fork of bwrap, maybe exiting: no name)
            init = " ".join(argv[argv.index(wrapper[0]) :]).strip()[:80].strip()  # as named
            leftovers = [p for p in leftovers if p.name.strip() not in (init, "?")]
        output = capture.text() or "(no output)"
        output = output if output.endswith("\n") else output + "\n"
        note += _leftover_note(leftovers, timed_out)
        if timed_out:
            done_msg = f"[timed out after {timeout:g} s: every process of the call was killed]"
            return ToolResult(output + note + done_msg, is_error=True)
        return ToolResult(f"{output}{note}[exit code {transport.get_returncode()}]")


def _leftover_note(leftovers: list[Leftover], timed_out: bool) -> str:
    """One line naming the background processes killed because they outlived the call."""
    if not leftovers or timed_out:
        return ""
    names = ", ".join(f"{p.name} (pid {p.pid})" for p in leftovers[:5])
    more = f" and {len(leftovers) - 5} more" if len(leftovers) > 5 else ""
    n = len(leftovers)
    plural = "es" if n > 1 else ""
    return f"[killed {n} background process{plural} that outlived the call: {names}{more}]\n"


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The shell tool."""
    return [ShellTool(rt)]

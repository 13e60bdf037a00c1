"""Wrapper commands for the shell classifier: env, nice, timeout, xargs, watch, sudo, …

Each rule finds the command the wrapper runs and checks it again with `check_argv`.
"""

from __future__ import annotations

from tools.builtin._shell_paths import DYN, PSUB, words
from tools.builtin._shell_rules import (
    Ctx,
    check_argv,
    check_assignment,
    operand_index,
    rule,
    run_script,
)

# --- wrappers: run their operand as a command -------------------------------------------------

_PEEL: dict[str, frozenset[str]] = {
    "nice": words("-n --adjustment"),
    "ionice": words("-c -n -p --class --classdata"),
    "nohup": frozenset(),
    "setsid": frozenset(),
    "time": words("-f -o --format --output"),
    "stdbuf": words("-i -o -e"),
    "exec": words("-a"),
    "builtin": frozenset(),
    "unbuffer": frozenset(),
    "caffeinate": words("-t -w"),
    "torsocks": frozenset(),
    "proxychains": words("-f"),
    "proxychains4": words("-f"),
    "catchsegv": frozenset(),
    "nocorrect": frozenset(),
    "noglob": frozenset(),
    "rlwrap": frozenset(),
    "strace": words("-o -e -p -s -u -E -P -a -b -I -O -S -X"),
    "ltrace": words("-o -e -p -s -u -n -a"),
    "busybox": frozenset(),
    "toybox": frozenset(),
    "systemd-run": words("-p --property -u --unit -E --setenv -M --machine --description --slice"),
}


@rule(*_PEEL)
def _peel(base: str, args: list[str], ctx: Ctx) -> str | None:
    if base == "systemd-run" and any(a.startswith("--uid") for a in args):
        return ctx.why("privilege escalation")
    return check_argv(args[operand_index(args, _PEEL[base]) :], ctx)


@rule("command")
def _command(base: str, args: list[str], ctx: Ctx) -> str | None:
    i = operand_index(args)
    if any(a in ("-v", "-V") for a in args[:i]):
        return None  # a lookup, nothing runs
    return check_argv(args[i:], ctx)


@rule("env")
def _env(base: str, args: list[str], ctx: Ctx) -> str | None:
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-S", "--split-string") or a.startswith("--split-string="):
            script = a.partition("=")[2] if "=" in a else " ".join(args[i + 1 : i + 2])
            return ctx.analyse(" ".join([script, *args[i + 2 :]]), ctx.depth + 1, ctx.stdin)
        if a in ("-u", "-C", "-P", "--unset", "--chdir"):
            i += 2
        elif a.startswith("-"):
            i += 1
        elif "=" in a and not a.startswith((DYN, PSUB)):
            key, _, value = a.partition("=")
            reason = check_assignment(key, value, ctx)
            if reason:
                return reason
            i += 1
        else:
            break
    return check_argv(args[i:], ctx)


@rule("timeout")
def _timeout(base: str, args: list[str], ctx: Ctx) -> str | None:
    i = operand_index(args, words("-s -k --signal --kill-after"))
    return check_argv(args[i + 1 :], ctx)  # the first operand is the duration


@rule("chroot")
def _chroot(base: str, args: list[str], ctx: Ctx) -> str | None:
    i = operand_index(args, words("--userspec --groups"))
    return check_argv(args[i + 1 :], ctx)  # the first operand is the new root


@rule("xargs", "parallel")
def _xargs(base: str, args: list[str], ctx: Ctx) -> str | None:
    takes = words("-I -n -P -L -s -d -E -a -j --max-args --max-procs --delimiter --arg-file")
    inner = args[operand_index(args, takes) :]
    if ":::" in inner:
        inner = inner[: inner.index(":::")]
    return check_argv([*(inner or ["echo"]), DYN], ctx)  # arguments arrive at run time


@rule("watch")
def _watch(base: str, args: list[str], ctx: Ctx) -> str | None:
    i = operand_index(args, words("-n --interval -q --equexit"))
    if any(a in ("-x", "--exec") for a in args[:i]):
        return check_argv(args[i:], ctx)
    return run_script(" ".join(args[i:]), ctx)


@rule("flock")
def _flock(base: str, args: list[str], ctx: Ctx) -> str | None:
    i = operand_index(args, words("-w -E --timeout --conflict-exit-code"))
    rest = args[i + 1 :]
    if rest[:1] in (["-c"], ["--command"]):
        return run_script(" ".join(rest[1:2]), ctx)
    return check_argv(rest, ctx)


@rule("sudo", "su", "doas", "pkexec", "run0", "sudoedit", "runuser")
def _privilege(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("privilege escalation")

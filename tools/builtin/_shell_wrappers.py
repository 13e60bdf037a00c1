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
# name -> (options that take a separate value, operands before the command). Each is tested in
# tests/test_shell_families.py ("wrappers that run their arguments").
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "nice": (words("-n --adjustment"), 0),
    "ionice": (words("-c -n -p --class --classdata"), 0),
    "nohup": (frozenset(), 0),
    "time": (words("-f -o --format --output"), 0),
    "stdbuf": (words("-i -o -e"), 0),
    "exec": (words("-a"), 0),
    "builtin": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
    "caffeinate": (words("-t -w"), 0),
    "torsocks": (frozenset(), 0),
    "proxychains": (words("-f"), 0),
    "proxychains4": (words("-f"), 0),
    "catchsegv": (frozenset(), 0),
    "nocorrect": (frozenset(), 0),
    "noglob": (frozenset(), 0),
    "rlwrap": (frozenset(), 0),
    "strace": (words("-o -e -p -s -u -E -P -a -b -I -O -S -X"), 0),
    "ltrace": (words("-o -e -p -s -u -n -a"), 0),
    "busybox": (frozenset(), 0),
    "toybox": (frozenset(), 0),
    "taskset": (frozenset(), 1),  # the CPU mask or list
    "chrt": (frozenset(), 1),  # the priority
    "setpriv": (
        words(
            "--reuid --regid --groups --inh-caps --ambient-caps --bounding-set "
            "--securebits --pdeathsig --selinux-label --apparmor-profile"
        ),
        0,
    ),
    "unshare": (words("-S -G -R -w --setuid --setgid --root --wd --map-user --map-group"), 0),
    "nsenter": (words("-t -S -G -r -w --target --setuid --setgid"), 0),
    "prlimit": (words("-p --pid"), 0),
    "numactl": (
        words("-N -C -m -p -i -P --cpunodebind --physcpubind --membind --preferred --interleave"),
        0,
    ),
    "fakeroot": (words("-l -s -i -b --lib --faked"), 0),
    "faketime": (words("-m -p"), 1),  # the fake time
    "xvfb-run": (words("-n -s -f -e -p --server-num --server-args --auth-file --error-file"), 0),
    "dbus-run-session": (frozenset(), 0),
    "ssh-agent": (words("-a -E -t -P"), 0),
    "firejail": (frozenset(), 0),
    "chronic": (frozenset(), 0),
    "sem": (words("-j --id -P --jobs --timeout"), 0),
    "cgexec": (words("-g"), 0),
    "sandbox-exec": (words("-f -n -p -D"), 0),
    "doit": (frozenset(), 0),
    "pv": (frozenset(), 0),
}
_BWRAP_VALUES = {
    **dict.fromkeys(
        words(
            "--bind --ro-bind --dev-bind --bind-try --ro-bind-try --dev-bind-try "
            "--symlink --setenv --file --bind-data --ro-bind-data --chmod"
        ),
        2,
    ),
    **dict.fromkeys(
        words(
            "--chdir --unsetenv --uid --gid --hostname --tmpfs --proc --dev --dir "
            "--remount-ro --seccomp --lock-file --sync-fd --info-fd --exec-label "
            "--file-label --cap-add --cap-drop --args --perms --size --userns "
            "--userns2 --pidns --block-fd --userns-block-fd --json-status-fd "
            "--overlay-src --tmp-overlay --ro-overlay --argv0"
        ),
        1,
    ),
    "--overlay": 3,
}


@rule(*WRAPPERS)
def _peel(base: str, args: list[str], ctx: Ctx) -> str | None:
    takes, skip = WRAPPERS[base]
    if base in ("taskset", "chrt", "prlimit") and any(a in ("-p", "--pid") for a in args):
        return None  # acts on an existing process, runs nothing
    i = operand_index(args, takes) + skip
    if base == "firejail":
        i = next((k for k, a in enumerate(args) if not a.startswith("-")), len(args))
    return check_argv(args[i:], ctx)


@rule("bwrap")
def _bwrap(base: str, args: list[str], ctx: Ctx) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("--"):
        i += 1 + _BWRAP_VALUES.get(args[i], 0)
    return check_argv(args[i:], ctx)


@rule("script")
def _script(base: str, args: list[str], ctx: Ctx) -> str | None:
    for i, a in enumerate(args):
        if a.startswith("--command="):
            return run_script(a.split("=", 1)[1], ctx)
        if a == "--command" or (a.startswith("-") and not a.startswith("--") and "c" in a):
            return run_script(args[i + 1], ctx) if i + 1 < len(args) else None
    return None  # an interactive shell on a terminal the call does not have


@rule("sg", "newgrp")
def _sg(base: str, args: list[str], ctx: Ctx) -> str | None:
    ops = [a for a in args if a != "-c"]
    return run_script(" ".join(ops[1:]), ctx) if len(ops) > 1 else None


@rule("entr")
def _entr(base: str, args: list[str], ctx: Ctx) -> str | None:
    i = operand_index(args)
    if "-s" in args[:i]:
        return run_script(" ".join(args[i:]), ctx)
    return check_argv(args[i:], ctx)


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
            return ctx.sub(" ".join([script, *args[i + 2 :]]), ctx.stdin)
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
    if any(a in ("-c", "--command") for a in args):  # the command string may sit anywhere
        ops = [a for a in args if not a.startswith("-")]
        return next((r for r in (run_script(o, ctx) for o in ops) if r), None)
    i = operand_index(args, words("-w -E --timeout --conflict-exit-code"))
    return check_argv(args[i + 1 :], ctx)


@rule("sudo", "su", "doas", "pkexec", "run0", "sudoedit", "runuser", "calife", "super")
def _privilege(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("privilege escalation")

"""Rules for commands that act on the machine, the bot's own process, or outlive the call.

Killing the bot (`kill $PPID`, `pkill -f larkbot`), replacing cron tables, stopping services,
powering off over D-Bus, and starting anything that keeps running after the call ends (`at`,
`systemd-run`, detached `tmux`/`screen`, `setsid`, daemonizers) are asked every time.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from tools.builtin._shell_paths import DYN, flags, words
from tools.builtin._shell_rules import Ctx, rule


@rule("shutdown", "reboot", "halt", "poweroff", "kexec")
def _power(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("shuts down or reboots the machine")


@rule("init", "telinit")
def _init(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("changes the runlevel") if args[:1] in (["0"], ["6"], ["1"], ["s"]) else None


_POWER_VERBS = words("poweroff reboot halt kexec suspend hibernate rescue emergency")
_SERVICE_VERBS = words(
    "stop disable mask kill isolate restart try-restart reload-or-restart condrestart "
    "daemon-reexec set-default edit revert switch-root"
)


# Verbs that make a unit start now or at every boot or login: it outlives the call.
_PERSIST_VERBS = words(
    "enable reenable start link preset preset-all add-wants add-requires set-property "
    "set-environment import-environment unmask"
)


@rule("systemctl")
def _systemctl(base: str, args: list[str], ctx: Ctx) -> str | None:
    verb = next(iter(flags(args).operands), "")
    if verb in _POWER_VERBS:
        return ctx.why("shuts down or reboots the machine")
    if verb in _SERVICE_VERBS:
        return ctx.why("stops, restarts or disables services")
    if verb in _PERSIST_VERBS:
        return ctx.why("starts or enables a service that outlives the call (persistence)")
    return None


@rule("service", "rc-service")
def _service(base: str, args: list[str], ctx: Ctx) -> str | None:
    ops = flags(args).operands
    verb = ops[1] if len(ops) > 1 else ""
    return None if verb in ("status", "") else ctx.why("stops, restarts or changes a service")


@rule("dbus-send", "busctl", "gdbus", "qdbus", "dbus")
def _dbus(base: str, args: list[str], ctx: Ctx) -> str | None:
    ops = flags(args).operands
    if base == "dbus-send" or (ops[:1] in (["call"], ["emit"], ["set-property"])):
        return ctx.why("calls a D-Bus method (power off, stop services, …)")
    return None


@rule("loginctl")
def _loginctl(base: str, args: list[str], ctx: Ctx) -> str | None:
    verb = next(iter(flags(args).operands), "")
    safe = verb.startswith(("list", "show", "session-status", "user-status")) or not verb
    return None if safe else ctx.why("ends sessions or powers off the machine")


@rule("sysctl")
def _sysctl(base: str, args: list[str], ctx: Ctx) -> str | None:
    writes = "w" in flags(args).shorts or any("=" in a for a in args) or "-p" in args
    return ctx.why("changes kernel parameters") if writes else None


@rule("ip")
def _ip(base: str, args: list[str], ctx: Ctx) -> str | None:
    ops = flags(args).operands
    changes = {"set", "del", "delete", "flush", "add", "change", "replace"} & set(ops[1:3])
    return ctx.why("changes network interfaces or routes") if changes else None


@rule("nmcli", "ifdown", "ifup", "ifconfig", "route")
def _network(base: str, args: list[str], ctx: Ctx) -> str | None:
    if base == "ifconfig" and len(flags(args).operands) <= 1:
        return None  # shows interfaces
    if base == "nmcli" and not ({"off", "down", "delete", "modify", "disconnect"} & set(args)):
        return None
    if base == "route" and not ({"add", "del", "delete", "flush"} & set(args)):
        return None
    return ctx.why("changes the network configuration")


@rule("hostnamectl", "timedatectl", "localectl", "launchctl", "update-rc.d", "chkconfig")
def _system_settings(base: str, args: list[str], ctx: Ctx) -> str | None:
    verb = next(iter(flags(args).operands), "")
    if base != "launchctl" and (not verb or verb in ("status", "show") or verb.startswith("list")):
        return None
    return ctx.why("changes system settings or services")


@rule("kill")
def _kill(base: str, args: list[str], ctx: Ctx) -> str | None:
    i = 2 if args[:1] in (["-s"], ["-n"]) else 1 if args[:1] and args[0].startswith("-") else 0
    pids = [a for a in args[i:] if a != "--"]
    if args[:1] == ["--"]:
        pids = args[1:]
    if any(p in ("-1", "1", "0", "-0") for p in pids):
        return ctx.why("signals every process (or init)")
    if any(p == str(os.getpid()) or p == str(os.getppid()) for p in pids):
        return ctx.why("kills the bot itself")
    if any(DYN in p and p != _LAST_JOB for p in pids):
        return ctx.why("kills a process chosen at run time (it may be the bot: $PPID)")
    return None


_LAST_JOB = "$!"  # the word the walker keeps for `$!`: the job this command just started


@lru_cache(maxsize=1)
def _own_names() -> tuple[str, str]:
    """This process's name and full command line (what pkill/killall would match)."""
    try:
        with open(f"/proc/{os.getpid()}/comm") as f:
            comm = f.read().strip()
        with open(f"/proc/{os.getpid()}/cmdline", "rb") as fb:
            cmdline = fb.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        comm, cmdline = "python3", "python3 larkbot"
    return comm, cmdline + " larkbot python3"


@rule("pkill", "killall", "killall5")
def _pkill(base: str, args: list[str], ctx: Ctx) -> str | None:
    if base != "pkill":
        return ctx.why("kills processes by name")
    f = flags(args)
    comm, cmdline = _own_names()
    subject = cmdline if "f" in f.shorts or "--full" in f.longs else comm + " python3 larkbot"
    for pattern in f.operands[-1:]:
        if DYN in pattern:
            return ctx.why("kills processes matching a pattern computed at run time")
        try:
            if re.search(pattern, subject):
                return ctx.why("kills processes by a pattern that matches the bot itself")
        except re.error:
            return ctx.why("kills processes by a pattern the classifier cannot read")
    if "-u" in args or "--euid" in f.longs:
        return ctx.why("kills every process of a user")
    return None


@rule("crontab")
def _crontab(base: str, args: list[str], ctx: Ctx) -> str | None:
    user = args[args.index("-u") + 1 : args.index("-u") + 2] if "-u" in args[:-1] else []
    listing = "-l" in args and set(args) <= {"-l", "-u", *user}
    return None if listing else ctx.why("replaces or removes cron jobs")


@rule("at", "batch")
def _at(base: str, args: list[str], ctx: Ctx) -> str | None:
    if base == "at" and set(args) & {"-l", "-c"} and not flags(args).operands[1:]:
        return None  # lists or shows queued jobs
    return ctx.why("schedules a command to run later, after the call has ended")


@rule("systemd-run", "daemonize", "start-stop-daemon", "setsid")
def _detach(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("starts a process that outlives the call")


@rule("tmux", "screen", "byobu", "dtach", "abduco")
def _multiplexer(base: str, args: list[str], ctx: Ctx) -> str | None:
    ops = flags(args).operands
    lists = ops[:1] and ops[0] in ("ls", "list-sessions", "list-windows", "has-session")
    if lists or (base == "screen" and set(args) & {"-ls", "-list"}):
        return None
    return ctx.why(f"{base} starts a session that outlives the call")


@rule("run-parts")
def _run_parts(base: str, args: list[str], ctx: Ctx) -> str | None:
    listing = {"--test", "--list"} & set(args)
    return None if listing else ctx.why("runs every program in a directory")


@rule("gpg", "gpg2")
def _gpg(base: str, args: list[str], ctx: Ctx) -> str | None:
    secret = any(a.startswith(("--export-secret", "--export-ownertrust")) for a in args)
    return ctx.why("exports secret keys") if secret else None

"""Rules for commands that destroy data or the system: rm, disks, power, kill, git, docker, …."""

from __future__ import annotations

import re

from tools.builtin._shell_paths import BLOCK_DEVICE, DYN, is_computed, is_sensitive, words
from tools.builtin._shell_rules import Ctx, check_argv, flags, rule


def _bad_target(path: str, sinks_ok: bool = False) -> bool:
    return is_computed(path) or is_sensitive(path, sinks_ok=sinks_ok)


@rule("rm", "unlink", "rmdir")
def _rm(base: str, args: list[str], ctx: Ctx) -> str | None:
    f = flags(args)
    if f.computed:
        return ctx.why("delete with arguments computed at run time")
    if base == "rm" and (
        "r" in f.shorts or "R" in f.shorts or any(x.startswith("--rec") for x in f.longs)
    ):
        return ctx.why("recursive delete")
    if any(is_sensitive(p) for p in f.operands):
        return ctx.why("deletes a system or sensitive path")
    return None


@rule("shred")
def _shred(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("irreversible overwrite")


@rule("dd")
def _dd(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("raw disk copy (dd)")


@rule("mkfs", "mke2fs", "mkswap", "wipefs", "blkdiscard", "fdisk", "sfdisk", "cfdisk", "gdisk")
@rule("sgdisk", "parted", "badblocks", "cryptsetup")
def _disk(base: str, args: list[str], ctx: Ctx) -> str | None:
    if base in ("fdisk", "sfdisk", "parted", "gdisk") and args and set(args) <= {"-l", "--list"}:
        return None  # listing partitions changes nothing
    return ctx.why("formats, partitions or wipes a disk")


@rule("shutdown", "reboot", "halt", "poweroff", "kexec")
def _power(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("shuts down or reboots the machine")


@rule("init", "telinit")
def _init(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("changes the runlevel") if args[:1] in (["0"], ["6"], ["1"], ["s"]) else None


_POWER_VERBS = words("poweroff reboot halt kexec suspend hibernate rescue emergency")


@rule("systemctl")
def _systemctl(base: str, args: list[str], ctx: Ctx) -> str | None:
    verb = next(iter(flags(args).operands), "")
    if verb in _POWER_VERBS:
        return ctx.why("shuts down or reboots the machine")
    if verb in ("stop", "disable", "mask", "kill", "isolate"):
        return ctx.why("stops or disables system services")
    return None


@rule("kill")
def _kill(base: str, args: list[str], ctx: Ctx) -> str | None:
    i = 2 if args[:1] in (["-s"], ["-n"]) else 1 if args[:1] and args[0].startswith("-") else 0
    pids = [a for a in args[i:] if a != "--"]
    if args[:1] == ["--"]:
        pids = args[1:]
    if any(p in ("-1", "1") for p in pids):
        return ctx.why("signals every process (or init)")
    return None


@rule("killall", "killall5")
def _killall(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("kills processes by name")


@rule("pkill")
def _pkill(base: str, args: list[str], ctx: Ctx) -> str | None:
    hard = any(a in ("-9", "-KILL", "-SIGKILL", "-u", "--euid") for a in args)
    return ctx.why("force-kills processes by pattern") if hard else None


@rule("chmod", "chown", "chgrp", "chattr", "setfacl")
def _chmod(base: str, args: list[str], ctx: Ctx) -> str | None:
    f = flags(args)
    recursive = "R" in f.shorts or "--recursive" in f.longs
    if recursive and any(_bad_target(p) for p in f.operands):
        return ctx.why("recursive permission change on a system path")
    if any(is_sensitive(p) for p in f.operands):
        return ctx.why("changes permissions of a system or sensitive path")
    return None


@rule("crontab")
def _crontab(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("removes every cron job") if "r" in flags(args).shorts else None


@rule("find")
def _find(base: str, args: list[str], ctx: Ctx) -> str | None:
    if "-delete" in args:
        return ctx.why("bulk delete (find -delete)")
    for i, a in enumerate(args):
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
            inner = [DYN if "{}" in x else x for x in args[i + 1 : end]]
            if inner and inner[0].rsplit("/", 1)[-1] in ("rm", "unlink", "shred", "rmdir"):
                return ctx.why("bulk delete (find -exec rm)")
            reason = check_argv(inner, ctx)
            if reason:
                return reason
        writes = a in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args)
        if writes and _bad_target(args[i + 1]):
            return ctx.why("writes a system or sensitive file")
    return None


@rule("tee", "truncate", "touch")
def _write_all(base: str, args: list[str], ctx: Ctx) -> str | None:
    f = flags(args)
    if any(_bad_target(p, sinks_ok=True) for p in f.operands):
        return ctx.why("writes a system or sensitive file")
    return None


@rule("cp", "mv", "install", "ln", "rsync", "scp")
def _copy(base: str, args: list[str], ctx: Ctx) -> str | None:
    f = flags(args)
    if base == "rsync" and any(x.startswith("--del") for x in f.longs):
        return ctx.why("rsync --delete removes files at the destination")
    every = base == "mv" or "t" in f.shorts or "--target-directory" in f.longs
    targets = f.operands if every else f.operands[-1:]
    if any(_bad_target(p) for p in targets if ":" not in p or p.startswith("/")):
        return ctx.why("overwrites or moves a system or sensitive path")
    return None


@rule("sed")
def _sed(base: str, args: list[str], ctx: Ctx) -> str | None:
    f = flags(args)
    if ("i" in f.shorts or "--in-place" in f.longs) and any(_bad_target(p) for p in f.operands):
        return ctx.why("edits a system or sensitive file in place")
    return None


_OUTPUT = {"curl": ("-o", "--output"), "wget": ("-O", "--output-document")}


@rule("curl", "wget")
def _download(base: str, args: list[str], ctx: Ctx) -> str | None:
    short, long = _OUTPUT[base]
    for i, a in enumerate(args[:-1]):
        short_hit = not a.startswith("--") and a.startswith("-") and a.endswith(short[1])
        if (a == long or short_hit) and _bad_target(args[i + 1], sinks_ok=True):
            return ctx.why("downloads over a system or sensitive file")
    for a in args:
        if a.startswith(long + "=") and _bad_target(a.split("=", 1)[1], sinks_ok=True):
            return ctx.why("downloads over a system or sensitive file")
    return None


@rule("tar")
def _tar(base: str, args: list[str], ctx: Ctx) -> str | None:
    runs = ("--to-command", "--checkpoint-action", "--use-compress-program", "--info-script")
    if any(a.startswith(runs) or a == "-I" for a in args):
        return ctx.why("tar option that runs a command")
    for i, a in enumerate(args[:-1]):
        if a in ("-C", "--directory") and is_sensitive(args[i + 1]):
            return ctx.why("extracts or writes into a system path")
    return None


_SQL = re.compile(
    r"\b(drop\s+(table|database|schema|index|view)|truncate\s+(table\s+)?\w+|"
    r"delete\s+from\s+[\w.\"`]+\s*(;|$))",
    re.I,
)


@rule("psql", "mysql", "mariadb", "sqlite3", "duckdb", "clickhouse-client", "redis-cli")
def _sql(base: str, args: list[str], ctx: Ctx) -> str | None:
    text = " ".join(args)
    if _SQL.search(text) or re.search(r"\bflush(all|db)\b", text, re.I):
        return ctx.why("destructive database statement")
    return None


@rule("iptables", "ip6tables", "nft", "ufw")
def _firewall(base: str, args: list[str], ctx: Ctx) -> str | None:
    hits = {"-F", "--flush", "-X", "flush", "disable", "reset"}
    return ctx.why("flushes or disables the firewall") if hits & set(args) else None


@rule("userdel", "deluser", "usermod", "passwd", "chpasswd", "groupdel", "visudo", "vipw")
@rule("insmod", "rmmod", "modprobe")
def _system_admin(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("changes system accounts or kernel modules")


@rule("rg")
def _rg(base: str, args: list[str], ctx: Ctx) -> str | None:
    runs = any(a.startswith(("--pre", "--hostname-bin")) for a in args)
    return ctx.why("rg option that runs a command for each file") if runs else None


@rule("kubectl")
def _kubectl(base: str, args: list[str], ctx: Ctx) -> str | None:
    verbs = set(flags(args).operands[:1])
    return ctx.why("deletes cluster resources") if verbs & {"delete", "drain"} else None


@rule("mount", "umount", "swapoff")
def _mount(base: str, args: list[str], ctx: Ctx) -> str | None:
    devices = [a for a in args if BLOCK_DEVICE.match(a) or a == "/"]
    return ctx.why("mounts or unmounts system filesystems") if devices or "-a" in args else None


# Importing registers the git and docker rules.
from tools.builtin import _shell_vcs  # noqa: E402, F401

"""Rules for commands that destroy or write data: rm, disks, copies, downloads, archives, SQL.

Every path such a command writes, deletes, truncates or re-permissions is judged by
`Ctx.write`: fine in the working directory and /tmp, dangerous in the home, in dotfiles, in
`.git/`, in `$LARKBOT_HOME` and anywhere else outside the workspace.
"""

from __future__ import annotations

import re

from tools.builtin._shell_paths import BLOCK_DEVICE, DYN, PSUB, flags, is_computed, is_sensitive
from tools.builtin._shell_rules import Ctx, check_argv, rule


def _bad_target(path: str, sinks_ok: bool = False) -> bool:
    return is_computed(path) or is_sensitive(path, sinks_ok=sinks_ok)


def _first_write(paths: list[str], ctx: Ctx) -> str | None:
    """The reason of the first dangerous write among `paths` (every one is recorded)."""
    reasons = [ctx.write(p) for p in paths]
    return next((r for r in reasons if r), None)


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
    return _first_write(f.operands, ctx)


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


@rule("chmod", "chown", "chgrp", "chattr", "setfacl")
def _chmod(base: str, args: list[str], ctx: Ctx) -> str | None:
    f = flags(args)
    recursive = "R" in f.shorts or "--recursive" in f.longs
    if recursive and any(_bad_target(p) for p in f.operands):
        return ctx.why("recursive permission change on a system path")
    if any(is_sensitive(p) for p in f.operands):
        return ctx.why("changes permissions of a system or sensitive path")
    targets = f.operands[1:] if base not in ("chattr", "setfacl") else f.operands
    if base == "setfacl":
        targets = [o for o in f.operands if not o.startswith(("u:", "g:", "o:", "m:", "d:"))]
    targets = [t for t in targets if not t.startswith(("+", "="))]
    return next((r for r in (ctx.write(t, record=False) for t in targets) if r), None)


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


@rule("tee", "truncate", "touch", "mkdir", "fallocate", "dos2unix", "unix2dos")
def _write_all(base: str, args: list[str], ctx: Ctx) -> str | None:
    f = flags(args)
    if any(_bad_target(p, sinks_ok=True) for p in f.operands):
        return ctx.why("writes a system or sensitive file")
    return _first_write([o for o in f.operands if not _is_size(o)], ctx)


def _rsync_shell(args: list[str], ctx: Ctx) -> str | None:
    """rsync runs its `-e`/`--rsh` value as the remote shell: judge it as a command."""
    for i, a in enumerate(args):
        if a in ("-e", "--rsh") and i + 1 < len(args):
            program = args[i + 1]
        elif a.startswith(("--rsh=", "--rsync-path=")) or (a.startswith("-e") and len(a) > 2):
            program = a.split("=", 1)[1] if a.startswith("--") else a[2:]
        elif a == "--rsync-path" and i + 1 < len(args):
            program = args[i + 1]
        else:
            continue
        if DYN in program or PSUB in program:
            return ctx.why("rsync remote shell computed at run time")
        inner = ctx.sub(program)
        if inner:
            return inner
    return None


def _is_size(word: str) -> bool:
    return bool(re.fullmatch(r"[-+<>/%]?\d+[KMGTP]?B?", word))


@rule("cp", "mv", "install", "ln", "rsync", "scp")
def _copy(base: str, args: list[str], ctx: Ctx) -> str | None:
    f = flags(args)
    if base == "rsync" and any(x.startswith("--del") for x in f.longs):
        return ctx.why("rsync --delete removes files at the destination")
    if base == "rsync" and "--remove-source-files" in f.longs:
        sources = [p for p in f.operands[:-1] if ":" not in p or p.startswith("/")]
        reason = next((r for r in (ctx.write(p) for p in sources) if r), None)
        if reason:
            return reason
    if base == "rsync":
        reason = _rsync_shell(args, ctx)
        if reason:
            return reason
    every = base == "mv" or "t" in f.shorts or "--target-directory" in f.longs
    targets = f.operands if every else f.operands[-1:]
    local = [p for p in targets if ":" not in p or p.startswith("/")]
    if any(_bad_target(p) for p in local):
        return ctx.why("overwrites or moves a system or sensitive path")
    if base in ("cp", "install") and len(f.operands) > 1 and not every:
        dest = f.operands[-1]
        for src in f.operands[:-1]:  # `cp a.sh dir/` writes dir/a.sh
            ctx.wrote(dest.rstrip("/") + "/" + src.rsplit("/", 1)[-1])
    return _first_write(local, ctx)


@rule("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "lz4", "compress")
def _compress(base: str, args: list[str], ctx: Ctx) -> str | None:
    f = flags(args)
    if "c" in f.shorts or "--stdout" in f.longs or "l" in f.shorts or "t" in f.shorts:
        return None  # to stdout, list or test: the files stay
    return _first_write(f.operands, ctx)  # replaces each file by its (de)compressed form


@rule("sort", "uniq", "patch", "split", "csplit", "unzip")
def _writes_option(base: str, args: list[str], ctx: Ctx) -> str | None:
    targets: list[str] = []
    for i, a in enumerate(args):
        value = args[i + 1] if i + 1 < len(args) else ""
        if base == "sort" and a in ("-o", "--output"):
            targets.append(value)
        elif base == "sort" and a.startswith(("--output=", "-o")) and len(a) > 2:
            targets.append(a.split("=", 1)[1] if "=" in a else a[2:])
        elif base == "unzip" and a == "-d":
            targets.append(value + "/x")
    ops = flags(args).operands
    if base == "uniq" and len(ops) > 1:
        targets.append(ops[1])
    if base == "patch":
        targets += ops[:1] or [""]  # without a file name, patch picks targets from the diff
        if not ops and not any(a.startswith(("-d", "--directory")) for a in args):
            targets = []
    if base in ("split", "csplit") and len(ops) > 1:
        targets.append(ops[-1] + "x")
    return _first_write(targets, ctx)


@rule("curl", "wget")
def _download(base: str, args: list[str], ctx: Ctx) -> str | None:
    targets: list[str] = []
    urls = [a for a in args if "://" in a]
    named = False
    for i, a in enumerate(args):
        value = args[i + 1] if i + 1 < len(args) else ""
        short = not a.startswith("--") and a.startswith("-")
        if base == "curl" and (a == "--output" or (short and a.endswith("o"))):
            targets.append(value)
        elif base == "curl" and (a == "--remote-name" or (short and a.endswith("O"))):
            named = True
        elif base == "wget" and (a == "--output-document" or (short and a.endswith("O"))):
            targets.append(value)
        elif a.startswith(("--output=", "--output-document=")):
            targets.append(a.split("=", 1)[1])
        elif base == "wget" and a in ("-P", "--directory-prefix"):
            targets += [value.rstrip("/") + "/" + _url_name(u) for u in urls]
    if base == "wget" and not targets:
        named = True
    if named:
        targets += [_url_name(u) for u in urls]
    if any(_bad_target(t, sinks_ok=True) for t in targets if t != "-"):
        return ctx.why("downloads over a system or sensitive file")
    return _first_write([t for t in targets if t and t != "-"], ctx)


def _url_name(url: str) -> str:
    """The file name wget/curl -O save a URL under."""
    path = url.split("://", 1)[-1].split("?", 1)[0].split("#", 1)[0]
    return path.rsplit("/", 1)[-1] if "/" in path else "index.html"


_SQL = re.compile(
    r"\b(drop\s+(table|database|schema|index|view)|truncate\s+(table\s+)?\w+|"
    r"delete\s+from\s+[\w.\"`]+\s*(;|$))",
    re.I,
)


@rule("psql", "mysql", "mariadb", "sqlite3", "duckdb", "clickhouse-client", "redis-cli")
def _sql(base: str, args: list[str], ctx: Ctx) -> str | None:
    text = " ".join(args) + "\n" + (ctx.stdin[1] if ctx.stdin and ctx.stdin[0] == "text" else "")
    if _SQL.search(text) or re.search(r"\bflush(all|db)\b", text, re.I):
        return ctx.why("destructive database statement")
    if _SQL_RUNS.search(text):
        return ctx.why("a database client command that runs programs or writes files")
    piped = ctx.stdin[1] if ctx.stdin else ""
    files = flags(args).operands[:1] if base in ("sqlite3", "duckdb") else []
    if files and _SQL_WRITES.search(text + "\n" + piped):  # changes a database file
        return ctx.write(files[0], record=False)
    return None


_SQL_WRITES = re.compile(
    r"\b(insert|update|replace|delete|alter|create|drop|vacuum|reindex|attach)\b|\.(restore|import)",
    re.I,
)


# sqlite3 `.shell`/`.system`/`.output`, psql `\!`/`\o |`/`COPY … PROGRAM`, mysql `system`.
_SQL_RUNS = re.compile(
    r"(^|[\s;'\"])\.(shell|system|output|once|load|import|save|backup|restore)\b|\\!|\\o\s*\||"
    r"\\(g|w|o)\s|\bprogram\s+'|(^|\s)(system|\\!)\s|\blo_(import|export)\b|\binto\s+(out|dump)file",
    re.I,
)


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
    if devices or "-a" in args:
        return ctx.why("mounts or unmounts system filesystems")
    binds = {"--bind", "--rbind", "-B", "-R"} & set(args) or any("bind" in a for a in args)
    if base == "mount" and binds:  # `mount --bind ~ /mnt` shows a directory under another name
        return ctx.why("bind-mounts a directory elsewhere")
    return None

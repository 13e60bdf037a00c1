"""Rules for small languages in everyday use: awk, sed, ed, vim, pagers, gdb, zip, make.

Their programs are read, not refused outright: `awk '{print $1}'` and `sed 's/a/b/'` are fine,
while `system()`, pipes to commands, `sed e`/`w`, `!cmd` (also `less +!cmd`), `zip -TT`,
`make --eval` or a makefile written in the same command run code.
"""

from __future__ import annotations

import re

from tools.builtin._shell_paths import DYN, PSUB, flags, words
from tools.builtin._shell_rules import Ctx, operand_index, rule, written_then_run

# system(), `print | "cmd"`, `"cmd" | getline`, `print > "file"`, extensions.
_AWK_RUNS = re.compile(
    r"\bsystem\s*\(|(?<![|])\|(?![|])|\bgetline\b|\bprintf?\b[^;{}]*>|@load|@include|"
    r"\bfflush\b|\bclose\s*\(|ENVIRON"
)


@rule("awk", "gawk", "mawk", "nawk", "busybox-awk")
def _awk(base: str, args: list[str], ctx: Ctx) -> str | None:
    takes = words("-F -v -f --field-separator --assign --file -i --include -l --load -E")
    if any(a in ("-f", "--file", "-E", "-i", "--include", "-l", "--load") for a in args):
        return ctx.why("awk runs a program file or loads an extension")
    i = operand_index(args, takes)
    if i >= len(args):
        return None
    program = args[i]
    if DYN in program or PSUB in program:
        return ctx.why("awk program computed at run time")
    if _AWK_RUNS.search(program):
        return ctx.why("awk program that runs commands or writes files")
    return None


def _sed_commands(script: str) -> list[tuple[str, str]]:
    """(command letter, its argument text) for each command of a sed script, roughly parsed."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(script)
    while i < n:
        while i < n and script[i] in " \t\n;{}!":
            i += 1
        # address: numbers, $, /re/, \cREc, ranges and steps
        while i < n and (script[i].isdigit() or script[i] in "$,~+"):
            i += 1
        if i < n and script[i] in "/\\":
            delim = script[i + 1] if script[i] == "\\" and i + 1 < n else "/"
            i = script.find(delim, i + 2 if script[i] == "\\" else i + 1)
            i = n if i < 0 else i + 1
            continue
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            break
        cmd = script[i]
        i += 1
        if cmd in "sy" and i < n:
            delim, parts, j = script[i], 0, i + 1
            while j < n and parts < 2:
                if script[j] == "\\":
                    j += 2
                    continue
                if script[j] == delim:
                    parts += 1
                j += 1
            end = j
            while end < n and script[end] not in ";\n}":
                end += 1
            out.append((cmd, script[j:end]))  # the flags (g, p, e, w file, …)
            i = end
        else:
            end = script.find("\n", i)
            end = n if end < 0 else end
            if cmd not in "aicrRwWeq" or cmd in "qQ":
                semi = script.find(";", i, end)
                end = semi if semi >= 0 else end
            out.append((cmd, script[i:end].strip()))
            i = end
    return out


@rule("sed", "gsed")
def _sed(base: str, args: list[str], ctx: Ctx) -> str | None:
    scripts, files, i = [], [], 0
    while i < len(args):
        a = args[i]
        if a in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            i += 2
            continue
        if a.startswith("--expression="):
            scripts.append(a.split("=", 1)[1])
        elif a in ("-f", "--file") or a.startswith("--file="):
            return ctx.why("sed runs a script file")
        elif not a.startswith("-") or a == "-":
            files.append(a)
        i += 1
    if not scripts and files:
        scripts, files = files[:1], files[1:]
    for script in scripts:
        if DYN in script:
            return ctx.why("sed script computed at run time")
        for cmd, arg in _sed_commands(script):
            if cmd == "e" or (cmd == "s" and "e" in re.sub(r"w.*", "", arg)):
                return ctx.why("sed runs a command (e)")
            target = arg.split("w", 1)[1].strip() if cmd == "s" and "w" in arg else ""
            if cmd in "wW":
                target = arg
            if target:
                reason = ctx.write(target)
                if reason:
                    return reason
    f = flags(args)
    if "i" in f.shorts or "--in-place" in f.longs or any(a.startswith("-i") for a in args):
        for path in files:
            reason = ctx.write(path)
            if reason:
                return reason
    return None


@rule("ed", "ex", "red")
def _ed(base: str, args: list[str], ctx: Ctx) -> str | None:
    fed = ctx.stdin[1] if ctx.stdin else ""
    if ctx.stdin and ctx.stdin[0] != "text":
        return ctx.why(f"{base} runs editor commands fed at run time")
    if "!" in fed or re.search(r"(^|\n)\s*w\s*\S", fed):
        return ctx.why(f"{base} commands that run programs or write files")
    return None


@rule("vim", "vi", "nvim", "view", "gvim", "emacs", "nano")
def _editor(base: str, args: list[str], ctx: Ctx) -> str | None:
    commands = any(a.startswith("+") or a in ("-c", "--cmd", "-S", "--eval", "-l") for a in args)
    if commands or "--batch" in args or "-batch" in args:
        return ctx.why(f"{base} runs editor commands, which can run programs")
    return None


@rule("less", "more", "most", "man")
def _pager(base: str, args: list[str], ctx: Ctx) -> str | None:
    # `less +'!cmd'` (or `+|`) hands its start-up command to a shell; man's pager (-P),
    # preprocessor and HTML browser (-H) options name programs it runs.
    if any(a.startswith("+") and ("!" in a or "|" in a) for a in args):
        return ctx.why(f"{base} start-up command that runs a shell")
    for i, a in enumerate(args if base == "man" else []):
        if a in ("-P", "--pager", "-H", "--html") and i + 1 < len(args):
            program = args[i + 1]
        elif a.startswith(("-P", "-H", "--pager=", "--html=")) and len(a) > 2:
            program = a.split("=", 1)[1] if a.startswith("--") else a[2:]
        else:
            continue
        if DYN in program or PSUB in program:
            return ctx.why("man runs a program computed at run time")
        inner = ctx.sub(program)
        if inner:
            return inner
    return None


@rule("zip")
def _zip(base: str, args: list[str], ctx: Ctx) -> str | None:
    if any(a == "-TT" or a.startswith("--unzip-command") for a in args):
        return ctx.why("zip -TT runs a command to test the archive")
    f = flags([a for a in args if a != "-TT"])
    written = f.operands[:1]  # the archive, created or replaced
    if "m" in f.shorts or "--move" in f.longs:
        written = f.operands  # -m deletes each file once it is packed
    return next((r for r in (ctx.write(p) for p in written if p != "-") if r), None)


@rule("gdb", "lldb")
def _gdb(base: str, args: list[str], ctx: Ctx) -> str | None:
    runs = {"-ex", "-iex", "-x", "-ix", "--eval-command", "--command", "-o", "--one-line"}
    if set(args) & runs or any(a.startswith(("--eval-command=", "--command=")) for a in args):
        return ctx.why(f"{base} commands can run programs")
    return None


_MAKEFILES = ("Makefile", "makefile", "GNUmakefile")


@rule("make", "gmake", "remake")
def _make(base: str, args: list[str], ctx: Ctx) -> str | None:
    for i, a in enumerate(args):
        value = args[i + 1] if i + 1 < len(args) else ""
        if a.startswith("--eval") or a == "-E":
            return ctx.why("make --eval runs rules given on the command line")
        if a.startswith(("SHELL=", ".SHELLFLAGS=", "MAKESHELL=")):
            return ctx.why("make with a replaced shell")
        if a in ("-f", "--file", "--makefile") or a.startswith(("--file=", "--makefile=")):
            path = value if "=" not in a else a.split("=", 1)[1]
            if path in ("-", "/dev/stdin") or path.startswith((PSUB, DYN)):
                return ctx.why("make reads its rules from a stream")
            if written_then_run(path, ctx):
                return ctx.why("make runs a makefile written earlier in the same command")
    if {"install", "uninstall"} & set(flags(args).operands):  # usually into /usr/local
        return ctx.why(f"{base} install writes outside the working directory")
    default = not any(a.startswith(("-f", "--file", "--makefile", "-C")) for a in args)
    if default and any(written_then_run(m, ctx) for m in _MAKEFILES):
        return ctx.why("make runs a makefile written earlier in the same command")
    return None

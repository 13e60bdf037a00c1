"""Rules for bash builtins that turn data into code or change where later commands act.

`trap`, `alias`, `mapfile -C`, `complete -C`, `bind -x`, `fc`, `hash -p`, `enable`, `coproc`,
`declare -n` all make text run as a command later; `cd`/`pushd` move the working directory the
later write checks are judged against.
"""

from __future__ import annotations

import posixpath

from tools.builtin._shell_paths import DYN, PSUB, absolute, flags
from tools.builtin._shell_reach import piped_search_reason
from tools.builtin._shell_rules import SUBSCRIPT_CODE, Ctx, carries_code, rule, run_script


@rule("trap")
def _trap(base: str, args: list[str], ctx: Ctx) -> str | None:
    rest = args[1:] if args[:1] == ["--"] else args
    if not rest or rest[0] in ("-p", "-l", "-P"):
        return None  # lists traps
    if rest[0] in ("-", ""):
        return None  # resets or ignores a signal
    return run_script(rest[0], ctx) or _signals_only(rest, ctx)


def _signals_only(rest: list[str], ctx: Ctx) -> str | None:
    # an action that is not judged dangerous by itself still runs at a moment the model picks
    return ctx.why("trap runs code later") if DYN in "".join(rest) else None


@rule("alias")
def _alias(base: str, args: list[str], ctx: Ctx) -> str | None:
    for a in args:
        name, eq, value = a.partition("=")
        if eq:
            reason = run_script(value, ctx) if value else None
            if reason:
                return reason
            if name in _COMMON or "/" in value:
                return ctx.why(f"alias gives {name!r} a different meaning")
    return None


_COMMON = frozenset(
    [
        "ls",
        "cat",
        "cd",
        "rm",
        "cp",
        "mv",
        "git",
        "echo",
        "grep",
        "sudo",
        "sh",
        "bash",
        "python",
        "python3",
        "make",
        "test",
        "[",
        "true",
        "false",
    ]
)


@rule("mapfile", "readarray")
def _mapfile(base: str, args: list[str], ctx: Ctx) -> str | None:
    if any(a.startswith("-") and "C" in a for a in args):
        return ctx.why(f"{base} -C runs a callback with the data it reads")
    names = [a for a in args if not a.startswith("-") and a.isidentifier()]
    return _assigned(names[-1:], ctx)  # the array's name comes last


@rule("complete", "compgen")
def _complete(base: str, args: list[str], ctx: Ctx) -> str | None:
    if any(a.startswith("-") and ("C" in a or "F" in a) for a in args):
        return ctx.why(f"{base} -C/-F registers a command to run")
    return None


@rule("bind")
def _bind(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("bind -x binds a key to a command") if "x" in flags(args).shorts else None


@rule("fc")
def _fc(base: str, args: list[str], ctx: Ctx) -> str | None:
    return None if "l" in flags(args).shorts else ctx.why("fc re-runs commands from the history")


@rule("hash")
def _hash(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("hash -p maps a command name to another program") if "-p" in args else None


@rule("enable")
def _enable(base: str, args: list[str], ctx: Ctx) -> str | None:
    ops = [a for a in args if a not in ("-a", "-p", "-s")]
    return ctx.why("enable loads or switches off shell builtins") if ops else None


@rule("coproc")
def _coproc(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("coproc starts a process fed at run time")


@rule("disown")
def _disown(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("disown detaches background jobs so they outlive the call")


@rule("declare", "typeset", "local", "export", "readonly")
def _declare(base: str, args: list[str], ctx: Ctx) -> str | None:
    f = flags([a for a in args if "=" not in a or a.startswith("-")])
    if "n" in f.shorts:
        return ctx.why(f"{base} -n makes a name refer to another variable")
    return None


def _assigned(names: list[str], ctx: Ctx) -> str | None:
    """Names a builtin assigns at run time: code-carrying ones (LD_PRELOAD, BASH_ENV) are asked."""
    for name in names:
        ctx.state.values[name] = DYN  # whatever was read is only known at run time
        if carries_code(name):
            return ctx.why(f"assigns {name} at run time, which makes programs load or run code")
    return None


@rule("read")
def _read(base: str, args: list[str], ctx: Ctx) -> str | None:
    if ctx.stdin and ctx.stdin[0] == "pipe":  # `find ~ | while read f; do cat "$f"; done`
        reach = piped_search_reason(ctx.stdin[1], ctx.state.cwd)
        if reach:
            return ctx.why(reach)
    names = [a for a in flags(args).operands]
    names += [args[i + 1] for i, a in enumerate(args[:-1]) if a.startswith("-") and a[-1] == "a"]
    return _assigned(names, ctx)


@rule("printf")
def _printf(base: str, args: list[str], ctx: Ctx) -> str | None:
    if "-v" in args[:-1]:
        return _assigned([args[args.index("-v") + 1]], ctx)
    attached = next((a[2:] for a in args[:1] if a.startswith("-v") and len(a) > 2), None)
    return _assigned([attached], ctx) if attached else None


@rule("getopts")
def _getopts(base: str, args: list[str], ctx: Ctx) -> str | None:
    return _assigned(args[1:2], ctx)


@rule("let")
def _let(base: str, args: list[str], ctx: Ctx) -> str | None:
    # each word is arithmetic, and bash runs `$(…)` found in a subscript (`a[$(id)]`), even
    # when the `$` or the brackets were escaped on the command line (`let a\[\$\(id\)\]=1`)
    if any(SUBSCRIPT_CODE.search(a) for a in [*args, "".join(args)]):  # the grammar may split
        return ctx.why("let evaluates a subscript that runs a command")
    return None


@rule("cd", "pushd", "chdir")
def _cd(base: str, args: list[str], ctx: Ctx) -> str | None:
    ops = [a for a in args if not a.startswith("-") or a == "-"]
    target = ops[0] if ops else "~"
    if target == "-" or target.startswith(PSUB) or (base == "pushd" and target.startswith("+")):
        ctx.state.cwd = None
        return None
    where = absolute(target, ctx.state.cwd)
    ctx.state.cwd = posixpath.normpath(where) if where else None
    return None


@rule("popd")
def _popd(base: str, args: list[str], ctx: Ctx) -> str | None:
    ctx.state.cwd = None  # back to a directory this analysis does not follow
    return None

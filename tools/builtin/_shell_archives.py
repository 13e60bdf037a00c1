"""Rules for archivers: what tar and zip write, delete and read besides the files they name.

`tar -cf ~/notes.txt src` replaces the archive's path, `--remove-files` and `zip -m` delete
what they pack, `tar -C dir -x` writes into `dir`: each is judged by `Ctx.write`. Packing from
above the bot's home (`tar czf x.tgz ~`) reads its secrets (see `_shell_reach`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tools.builtin._shell_paths import is_sensitive
from tools.builtin._shell_reach import REASON, holds_bot_home
from tools.builtin._shell_rules import Ctx, rule

# Old-style and short letters that take the next word as their value.
_TAR_VALUES = frozenset("fCTXbKNVgHL")
_TAR_LONG_VALUES = frozenset(
    ("--file", "--directory", "--files-from", "--exclude-from", "--blocking-factor", "--label")
)
_RUNS = ("--to-command", "--checkpoint-action", "--use-compress-program", "--info-script")


@dataclass
class TarCall:
    """A tar command line taken apart: mode letters, the archive, -C targets, the operands."""

    letters: set[str] = field(default_factory=set)
    longs: set[str] = field(default_factory=set)
    archive: str | None = None
    directories: list[str] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)


def parse_tar(args: list[str]) -> TarCall:
    """Old style (`tar czf x.tgz src`), short clusters (`-cvf/x.tar`) and long options."""
    call, pending, i = TarCall(), list[str](), 0
    while i < len(args):
        a = args[i]
        i += 1
        if pending:
            letter = pending.pop(0)
            call.archive = a if letter == "f" else call.archive
            call.directories += [a] if letter == "C" else []
        elif a.startswith("--"):
            name, eq, value = a.partition("=")
            call.longs.add(name)
            if name in _TAR_LONG_VALUES and not eq and i < len(args):
                value, i = args[i], i + 1
            call.archive = value if name == "--file" else call.archive
            call.directories += [value] if name == "--directory" else []
        elif (a.startswith("-") and len(a) > 1) or (
            i == 1 and a and a[0].isalpha() and "/" not in a
        ):
            body = a.lstrip("-")
            for k, letter in enumerate(body):
                call.letters.add(letter)
                if letter in _TAR_VALUES:
                    rest = body[k + 1 :]
                    if a.startswith("-") and rest:  # `-cvf/x.tar`: the rest is the value
                        call.archive = rest if letter == "f" else call.archive
                        call.directories += [rest] if letter == "C" else []
                        break
                    pending.append(letter)
        else:
            call.operands.append(a)
    return call


@rule("tar", "bsdtar")
def _tar(base: str, args: list[str], ctx: Ctx) -> str | None:
    if any(a.startswith(_RUNS) or a == "-I" for a in args):
        return ctx.why("tar option that runs a command")
    call = parse_tar(args)
    creates = bool({"c", "r", "u", "A"} & call.letters)
    creates = creates or bool({"--create", "--append", "--update", "--concatenate"} & call.longs)
    extracts = "x" in call.letters or bool({"--extract", "--get"} & call.longs)
    for directory in call.directories if extracts or not creates else []:
        if is_sensitive(directory):
            return ctx.why("extracts or writes into a system path")
        reason = ctx.write(directory.rstrip("/") + "/x")
        if reason:
            return reason
    if creates and call.archive not in (None, "-"):
        reason = ctx.write(call.archive or "")
        if reason:
            return reason
    roots = call.operands + call.directories  # packed from: `tar -C ~ -czf x.tgz .` reads ~
    if creates and any(holds_bot_home(o, ctx.state.cwd) for o in roots):
        return ctx.why(REASON)
    if "--remove-files" in call.longs:
        return next((r for r in (ctx.write(o) for o in call.operands) if r), None)
    return None


@rule("7z", "7za", "7zr")
def _seven_zip(base: str, args: list[str], ctx: Ctx) -> str | None:
    """`7z a|u|d archive …` writes the archive; `x|e -oDIR` extracts into DIR."""
    ops = [a for a in args if not a.startswith("-")]
    verb, archive = [*ops, "", ""][:2]
    targets = [archive] if verb in ("a", "u", "d", "rn") and archive else []
    targets += [a[2:].rstrip("/") + "/x" for a in args if a.startswith("-o") and len(a) > 2]
    if "-sdel" in args:  # deletes the files once packed
        targets += ops[2:]
    return next((r for r in (ctx.write(t) for t in targets) if r), None)

"""Per-command rules of the shell classifier: argv in, a reason out when the command is dangerous.

This module is the rule table (`RULES`, filled by `@rule`) and what every rule shares; the
rule modules (`_shell_builtins`, `_shell_code`, `_shell_commands`, `_shell_vcs`, …) import it
and register themselves, and the classifier (`_shell_danger`) imports them all. Nothing here
imports a rule module, so the imports only ever point one way.

Wrappers (env, nice, timeout, xargs, find -exec, …) are peeled and their inner command is
checked again; shells and `-c` strings are handed back to the parser through `Ctx.analyse`.
Unknown means ask: a command the rules do not know is not dangerous by itself (running any
command needs consent once per session), but one that may run its arguments as a command
(`mystery-wrapper rm -rf x`) is judged by those arguments, and every argument is checked for
secrets and cloud-metadata addresses, whatever the command.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from tools.builtin._shell_paths import (
    DYN,
    PSUB,
    absolute,
    is_sensitive,
    metadata_host,
    read_reason,
    show,
    words,
    write_reason,
)
from tools.builtin._shell_reach import piped_search_reason, recursive_read_reason

Stdin = tuple[str, str] | None  # ("pipe", text) | ("text", heredoc body) | ("psub", text)


def working_directory() -> str | None:
    """The process's working directory, None when it no longer exists."""
    try:
        return os.getcwd()
    except OSError:
        return None


@dataclass
class ScriptState:
    """What earlier commands of the same script did: where `cd` went, files written, values."""

    cwd: str | None = field(default_factory=working_directory)
    workspace: str | None = None  # the directory the call runs in (cwd before any `cd`)
    written: set[str] = field(default_factory=set)  # absolute paths; "" for a computed target
    values: dict[str, str] = field(default_factory=dict)  # variable -> last value assigned

    def __post_init__(self) -> None:
        self.workspace = self.workspace or self.cwd


Analyse = Callable[[str, int, Stdin, ScriptState], "str | None"]


@dataclass(frozen=True)
class Ctx:
    """Where a command sits: its text (for reasons), nesting depth, stdin, the script's state."""

    text: str
    depth: int
    analyse: Analyse
    stdin: Stdin = None
    state: ScriptState = field(default_factory=ScriptState)

    def why(self, what: str) -> str:
        """`what: <the command>` — the reason format."""
        return f"{what}: {show(self.text)}"

    def sub(self, script: str, stdin: Stdin = None) -> str | None:
        """Judge a script nested in this command (`sh -c '…'`) with the same script state."""
        return self.analyse(script, self.depth + 1, stdin, self.state)

    def wrote(self, path: str) -> None:
        """Remember that this script writes `path` (so running it later is write-then-run)."""
        where = absolute(path, self.state.cwd) if not path.startswith(PSUB) else None
        if path.startswith(PSUB) or path.startswith("/dev/"):
            return
        self.state.written.add(where or "")

    def written(self, path: str) -> bool:
        """True when `path` was written earlier in this script (or a computed target was)."""
        if "" in self.state.written:
            return True
        where = absolute(path, self.state.cwd)
        return where is None or where in self.state.written

    def write(self, path: str, record: bool = True) -> str | None:
        """The reason writing `path` is dangerous (recorded, unless only permissions change)."""
        if record:
            self.wrote(path)
        if is_sensitive(path, sinks_ok=True):
            return self.why("overwrites a system or sensitive file")
        reason = write_reason(path, self.state.cwd, self.state.workspace)
        return self.why(reason) if reason else None


Rule = Callable[[str, list[str], Ctx], "str | None"]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register a rule for these command names."""

    def deco(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn

    return deco


_METADATA = re.compile(r"169\.254\.169\.254|metadata\.google\.internal|100\.100\.100\.200|fd00:ec2")
_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?$")
_PIP = re.compile(r"^pip\d+(\.\d+)*$")


def check_argv(argv: list[str], ctx: Ctx) -> str | None:
    """The reason this simple command is dangerous, or None."""
    if not argv:
        return None
    name = argv[0]
    if DYN in name or PSUB in name:
        return ctx.why("command name is computed at run time")
    if any(c in name for c in "*?["):
        return ctx.why("command name is a glob pattern")
    base = posixpath.basename(name.rstrip("/")) or name
    args = argv[1:]
    fn = RULES.get(base)
    if fn is None and base.startswith(("mkfs", "newfs")):
        fn = RULES["mkfs"]
    if fn is None and _PYTHON.match(base):
        fn = RULES["python"]
    if fn is None and _PIP.match(base):
        fn = RULES["pip"]
    if DYN in base or base.startswith("$"):
        return ctx.why("command name is computed at run time")
    reason = fn(base, args, ctx) if fn is not None else None
    reason = reason or generic(base, args, ctx)
    if reason or fn is not None:
        return reason
    if "/" in name and written_then_run(name, ctx):
        return ctx.why("runs a file written earlier in the same command")
    if base in NON_RUNNERS:
        return None
    return _runs_arguments(args, ctx)


# Commands known not to run their arguments as a command (so `echo rm -rf /` is only text).
NON_RUNNERS = words(
    "echo printf grep egrep fgrep rg ag ack cat less more head tail wc sort uniq cut tr ls ll "
    "man whatis apropos which whereis type info help test [ [[ expr jq yq file stat basename "
    "dirname realpath readlink printenv true false seq date pwd diff cmp md5sum sha1sum "
    "sha256sum sha512sum b2sum base64 base32 xxd od hexdump column fold fmt nl paste join comm "
    "rev tac notify-send logger wall say figlet cowsay pip pip3 npm npx yarn pnpm cargo go "
    "pytest tox uv poetry docker-compose kubectl helm terraform make ping dig host nslookup "
    "traceroute whois openssl gpg ssh-keygen history journalctl tree fd fdfind du df free ps "
    "top htop uptime uname hostname whoami id groups lsof ss netstat ip ifconfig zip unzip "
    "gzip gunzip bzip2 xz zstd tar curl wget http sqlite3 psql mysql redis-cli mkdir rmdir "
    "touch cp mv ln install tee sleep wait read local declare typeset export readonly set "
    "unset shift return exit break continue getopts let cd pushd popd dirs umask jobs fg bg"
)


def _runs_arguments(args: list[str], ctx: Ctx) -> str | None:
    """An unknown command may be a wrapper: judge each suffix that starts with a known command."""
    for k, a in enumerate(args):
        if a in RULES and RULES[a] is not None:
            reason = check_argv(args[k:], ctx)
            if reason:
                return f"an unknown command may run its arguments — {reason}"
    return None


def generic(base: str, args: list[str], ctx: Ctx) -> str | None:
    """Checks for every command: arguments naming secrets or a cloud-metadata address."""
    if base not in _READS_NOTHING:
        for a in args:
            why = read_reason(a, ctx.state.cwd)
            if why:
                return ctx.why(why)
    if any(_METADATA.search(a) or metadata_host(a) for a in args if "." in a or ":" in a):
        return ctx.why("reads cloud instance credentials (metadata endpoint)")
    reach = recursive_read_reason(base, args, ctx.state.cwd)
    if reach is None and base in ("xargs", "parallel") and ctx.stdin and ctx.stdin[0] == "pipe":
        inner = next((a for a in args if not a.startswith("-") and a != "{}"), "echo")
        if inner not in _READS_NOTHING:
            reach = piped_search_reason(ctx.stdin[1], ctx.state.cwd)
    printing = base in _READS_NOTHING or base in ("echo", "printf")
    if reach is None and not printing and any(DYN in a for a in args):
        reach = piped_search_reason(ctx.text, ctx.state.cwd)  # `cat $(find ~ -name key)`
    return ctx.why(reach) if reach else None


# Commands that name files without reading them (listing ~/.ssh is not reading a key).
_READS_NOTHING = words("ls ll stat file du test [ [[ ssh ssh-add ssh-keygen cd pushd realpath")


def written_then_run(path: str, ctx: Ctx) -> bool:
    """True when `path`, run as a program or script, was written earlier in this command."""
    return bool(ctx.state.written) and bool(path) and ctx.written(path)


# Environment variables whose value is code some program will run, or that load code.
_ENV_COMMANDS = words(
    "GIT_SSH_COMMAND GIT_SSH GIT_EXTERNAL_DIFF GIT_PAGER GIT_EDITOR GIT_ASKPASS SSH_ASKPASS "
    "PAGER EDITOR VISUAL MANPAGER LESSOPEN LESSCLOSE BROWSER SUDO_ASKPASS"
)
_ENV_LOADERS = words(
    "BASH_ENV ENV PS1 PS2 PS4 PROMPT_COMMAND LD_PRELOAD LD_AUDIT LD_LIBRARY_PATH "
    "DYLD_INSERT_LIBRARIES DYLD_LIBRARY_PATH PERL5OPT RUBYOPT NODE_OPTIONS SHELLOPTS BASHOPTS "
    "PYTHONSTARTUP"
)


# A subscript holding a command substitution or a variable: bash arithmetic expands it (code).
SUBSCRIPT_CODE = re.compile(r"\[[^\]]*(\$\(|`|\$\{?[A-Za-z_])")


def carries_code(name: str) -> bool:
    """True for a variable whose value some program runs or loads as code (or PATH)."""
    return name in _ENV_LOADERS or name in _ENV_COMMANDS or name == "PATH"


def check_assignment(name: str, value: str, ctx: Ctx) -> str | None:
    """`NAME=value` that makes a later program run code: judge the code, or refuse loaders."""
    ctx.state.values[name] = value
    named = read_reason(value, ctx.state.cwd)  # `f=~/.larkbot/.secrets/x; cat $f`
    if named:
        return ctx.why(f"a variable set to a protected path ({named})")
    if SUBSCRIPT_CODE.search(value):  # `declare -i x=a\[\$\(id\)\]` runs it at once
        return ctx.why("a value bash arithmetic would execute (a[$(…)])")
    if name in _ENV_LOADERS:
        return ctx.why(f"sets {name}, which makes programs load or run code")
    if name == "PATH":
        return ctx.why("changes PATH, so other programs run under familiar names")
    if name in _ENV_COMMANDS:
        if DYN in value or PSUB in value:
            return ctx.why(f"sets {name} to a command computed at run time")
        return ctx.sub(value)
    return None


def operand_index(args: list[str], takes_value: frozenset[str] = frozenset()) -> int:
    """Index of the first operand, skipping options and the values of those in `takes_value`."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return i + 1
        if a == "-" or not a.startswith("-"):
            return i
        i += 2 if a in takes_value else 1
    return i


def run_script(script: str, ctx: Ctx, stdin: Stdin = None) -> str | None:
    """Judge a script given as a string (`sh -c`, `trap`, `watch`); computed ones are refused."""
    if DYN in script or PSUB in script:
        return ctx.why("runs a script computed at run time")
    return ctx.sub(script, stdin)

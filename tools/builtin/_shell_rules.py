"""Per-command rules of the shell classifier: argv in, a reason out when the command is dangerous.

Wrappers (env, nice, timeout, xargs, find -exec, …) are peeled and their inner command is
checked again; shells and `-c` strings are handed back to the parser through `Ctx.analyse`.
Unknown commands are not dangerous here: running any command already needs consent once per
session; these rules decide which ones must be asked every time.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from tools.builtin._shell_paths import DYN, PSUB, is_computed, is_sensitive, show, words

Stdin = tuple[str, str] | None  # ("pipe", text) | ("text", heredoc body) | ("psub", text)


@dataclass(frozen=True)
class Ctx:
    """Where a command sits: its text (for reasons), nesting depth, what feeds its stdin."""

    text: str
    depth: int
    analyse: Callable[[str, int, Stdin], str | None]
    stdin: Stdin = None

    def why(self, what: str) -> str:
        """`what: <the command>` — the reason format."""
        return f"{what}: {show(self.text)}"


Rule = Callable[[str, list[str], Ctx], "str | None"]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register a rule for these command names."""

    def deco(fn: Rule) -> Rule:
        for n in names:
            RULES[n] = fn
        return fn

    return deco


@dataclass
class Flags:
    """An argv split into short flag letters, long flags, operands; `computed` if any is $…."""

    shorts: set[str]
    longs: set[str]
    operands: list[str]
    computed: bool


def flags(args: list[str]) -> Flags:
    """Split options from operands the GNU way (options may follow operands; `--` ends them)."""
    out = Flags(set(), set(), [], False)
    ended = False
    for a in args:
        out.computed = out.computed or a.startswith((DYN, PSUB))
        if ended or a == "-" or not a.startswith("-"):
            out.operands.append(a)
        elif a == "--":
            ended = True
        elif a.startswith("--"):
            out.longs.add(a.split("=", 1)[0])
        else:
            out.shorts.update(a[1:])
    return out


_METADATA = re.compile(r"169\.254\.169\.254|metadata\.google\.internal|100\.100\.100\.200|fd00:ec2")
_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?$")


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
    reason = fn(base, args, ctx) if fn else None
    if reason is None and any(_METADATA.search(a) for a in args):
        reason = ctx.why("reads cloud instance credentials (metadata endpoint)")
    return reason


# Environment variables whose value is code some program will run, or that load code.
_ENV_COMMANDS = words(
    "GIT_SSH_COMMAND GIT_SSH GIT_EXTERNAL_DIFF GIT_PAGER GIT_EDITOR GIT_ASKPASS SSH_ASKPASS "
    "PAGER EDITOR VISUAL MANPAGER LESSOPEN LESSCLOSE BROWSER PROMPT_COMMAND SUDO_ASKPASS"
)
_ENV_LOADERS = words(
    "BASH_ENV ENV PS4 LD_PRELOAD LD_AUDIT LD_LIBRARY_PATH DYLD_INSERT_LIBRARIES "
    "DYLD_LIBRARY_PATH PERL5OPT RUBYOPT NODE_OPTIONS SHELLOPTS BASHOPTS PYTHONSTARTUP"
)


def check_assignment(name: str, value: str, ctx: Ctx) -> str | None:
    """`NAME=value` that makes a later program run code: judge the code, or refuse loaders."""
    if name in _ENV_LOADERS:
        return ctx.why(f"sets {name}, which makes programs load or run code")
    if name in _ENV_COMMANDS:
        if DYN in value or PSUB in value:
            return ctx.why(f"sets {name} to a command computed at run time")
        return ctx.analyse(value, ctx.depth + 1, None)
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


# --- code carriers: shells, eval, source, trap, interpreters ----------------------------------


def run_script(script: str, ctx: Ctx, stdin: Stdin = None) -> str | None:
    """Judge a script given as a string (`sh -c`, `trap`, `watch`); computed ones are refused."""
    if DYN in script or PSUB in script:
        return ctx.why("runs a script computed at run time")
    return ctx.analyse(script, ctx.depth + 1, stdin)


def _script_file(path: str, ctx: Ctx, shell: bool) -> str | None:
    if path.startswith(PSUB):
        return ctx.why("runs code from a process substitution")
    if path.startswith(("/dev/tcp/", "/dev/udp/")):
        return ctx.why("runs code read from the network")
    if path in ("-", "/dev/stdin", "/dev/fd/0"):
        return _fed(ctx, shell, "")
    if is_computed(path):
        return ctx.why("runs a script whose path is computed at run time")
    return None


def _fed(ctx: Ctx, shell: bool, lang: str) -> str | None:
    """A shell or interpreter reading its program from stdin: judge what feeds it."""
    if ctx.stdin is None:
        return None
    kind, payload = ctx.stdin
    if kind == "pipe":
        return f"pipe to {'shell' if shell else 'interpreter'}: {show(payload)}"
    if kind == "psub":
        return ctx.why("runs code from a process substitution")
    if shell:
        return ctx.analyse(payload, ctx.depth + 1, None)
    return code_net(lang, payload, ctx)


@rule(*words("sh bash zsh dash ksh mksh ash fish csh tcsh yash posh rbash"))
def _shell(base: str, args: list[str], ctx: Ctx) -> str | None:
    i, has_c, stdin = 0, False, False
    while i < len(args):
        a = args[i]
        if a in ("--", "-"):
            stdin, i = stdin or a == "-", i + 1
            break
        if not a.startswith(("-", "+")) or a.startswith((DYN, PSUB)):
            break
        if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if not a.startswith("--"):
            has_c, stdin = has_c or "c" in a, stdin or "s" in a
        i += 1
    rest = args[i:]
    if has_c:
        return run_script(rest[0], ctx, ctx.stdin) if rest else None  # the script inherits stdin
    if rest and not stdin:
        return _script_file(rest[0], ctx, shell=True)
    return _fed(ctx, True, base)


@rule("eval")
def _eval(base: str, args: list[str], ctx: Ctx) -> str | None:
    return ctx.why("eval runs a string built at run time")


@rule("source", ".")
def _source(base: str, args: list[str], ctx: Ctx) -> str | None:
    return _script_file(args[0], ctx, shell=True) if args else None


@rule("trap")
def _trap(base: str, args: list[str], ctx: Ctx) -> str | None:
    if not args or args[0].startswith("-"):
        return None
    return run_script(args[0], ctx)


_CODE_FLAGS = {
    "python": words("-c"),
    "perl": words("-e -E"),
    "ruby": words("-e"),
    "node": words("-e --eval -p --print"),
    "php": words("-r"),
    "lua": words("-e"),
    "osascript": words("-e"),
    "Rscript": words("-e"),
    "bun": words("-e --eval"),
}
_TAKES_VALUE = {
    "python": words("-W -X"),
    "perl": words("-I -M -m"),
    "ruby": words("-I -r -C"),
    "node": words("-r --require --import --loader"),
}
_ALIAS = {"nodejs": "node", "luajit": "lua", "python": "python"}

_CODE_NET = (
    (re.compile(r"\brm\s+-\w*[rR]|rmtree|remove_tree|\brm_rf?\b|rmSync|recursive\s*[:=]\s*true"),
     "recursive delete"),
    (re.compile(
        r"os\.system|subprocess|os\.popen|os\.exec|os\.spawn|pty\.spawn|child_process|execSync|"
        r"spawnSync|\bsystem\s*\(|\bexec\s*\(|\beval\s*\(|\bpopen\s*\(|shell_exec|passthru|"
        r"proc_open|IO\.popen|%x\{|\bqx\s*[{(/]|`|\|\s*getline|\|&"),
     "runs commands the classifier cannot see"),
    (re.compile(r"\bfork\s*\(|os\.fork"), "forks processes"),
    (re.compile(r"\bsudo\b"), "privilege escalation"),
    (re.compile(r"/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk)"), "touches a block device"),
)  # fmt: skip


def code_net(lang: str, code: str, ctx: Ctx) -> str | None:
    """A second net for code in other languages (not parsed): patterns that run or destroy."""
    if DYN in code or PSUB in code:
        return ctx.why(f"{lang} code computed at run time")
    for pattern, what in _CODE_NET:
        if pattern.search(code):
            return f"{what} in {lang} code: {show(code)}"
    return None


@rule(
    "python",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "php",
    "lua",
    "luajit",
    "osascript",
    "Rscript",
    "bun",
)
def _interpreter(base: str, args: list[str], ctx: Ctx) -> str | None:
    lang = "python" if _PYTHON.match(base) else _ALIAS.get(base, base)
    code_flags, takes = _CODE_FLAGS.get(lang, frozenset()), _TAKES_VALUE.get(lang, frozenset())
    codes: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        flag, eq, value = a.partition("=")
        if a == "--" or not a.startswith("-") or a == "-":
            break
        cluster = lang in ("perl", "ruby") and not a.startswith("--") and a[-1] in "eE"
        if a in code_flags or (eq and flag in code_flags) or cluster:
            codes.append(value if eq else " ".join(args[i + 1 : i + 2]))
            i += 1 if eq else 2
            continue
        if lang == "python" and a.startswith(("-m", "-c")):
            if a.startswith("-c"):
                codes.append(a[2:])
                break
            return None  # python -m module: runs installed code, not stdin
        if lang == "perl" and "i" in a and not a.startswith("--"):
            files = args[i + 1 :]
            if any(is_sensitive(f) for f in files if not f.startswith("-")):
                return ctx.why("edits a system or sensitive file in place")
        i += 2 if a in takes else 1
    if codes:
        return code_net(lang, "\n".join(codes), ctx)
    rest = args[i + (1 if args[i : i + 1] == ["--"] else 0) :]
    if rest and rest[0] != "-":
        return _script_file(rest[0], ctx, shell=False)
    return _fed(ctx, False, lang)


@rule("awk", "gawk", "mawk", "nawk")
def _awk(base: str, args: list[str], ctx: Ctx) -> str | None:
    takes = words("-F -v -f --field-separator --assign --file")
    if any(a in ("-f", "--file") for a in args):
        return None
    i = operand_index(args, takes)
    return code_net("awk", args[i], ctx) if i < len(args) else None


# Importing registers the wrapper and per-command rules (env, xargs, rm, dd, git, …) into RULES.
from tools.builtin import _shell_commands, _shell_wrappers  # noqa: E402, F401

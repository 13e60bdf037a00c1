"""Rules for commands that carry code: shells, `eval`, `source`, and other languages' interpreters.

Shell scripts given as strings are parsed again; code in any other language is never judged
safe (`python -c`, `perl -e`, a heredoc fed to `node`): the reason names what it seems to do
when a pattern matches, else says the classifier cannot judge it. A script or module written
earlier in the same command and then run is dangerous too.
"""

from __future__ import annotations

import re

from tools.builtin._shell_packages import BUN_VERBS, python_module_installs
from tools.builtin._shell_paths import DYN, PSUB, is_computed, is_sensitive, show, words
from tools.builtin._shell_rules import (
    _PYTHON,
    Ctx,
    rule,
    run_script,
    written_then_run,
)


def _script_file(path: str, ctx: Ctx, shell: bool) -> str | None:
    if path.startswith(PSUB):
        return ctx.why("runs code from a process substitution")
    if path.startswith(("/dev/tcp/", "/dev/udp/")):
        return ctx.why("runs code read from the network")
    if path in ("-", "/dev/stdin", "/dev/fd/0"):
        return _fed(ctx, shell, "")
    if is_computed(path):
        return ctx.why("runs a script whose path is computed at run time")
    if written_then_run(path, ctx):
        return ctx.why("runs a script written earlier in the same command")
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
        return ctx.sub(payload)
    return inline_code(lang, payload, ctx)


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


_CODE_FLAGS = {
    "python": words("-c"),
    "perl": words("-e -E"),
    "ruby": words("-e"),
    "node": words("-e --eval -p --print"),
    "php": words("-r"),
    "lua": words("-e"),
    "osascript": words("-e"),
    "Rscript": words("-e"),
    "R": words("-e"),
    "bun": words("-e --eval -p --print"),
    "julia": words("-e -E --eval --print"),
    "pwsh": words("-c -Command -EncodedCommand -e"),
    "groovy": words("-e"),
    "elixir": words("-e --eval"),
    "erl": words("-eval"),
    "sbcl": words("--eval"),
    "guile": words("-c"),
    "racket": words("-e --eval"),
    "irb": frozenset(),
    "tclsh": frozenset(),
    "wish": frozenset(),
    "expect": words("-c"),
    "jshell": frozenset(),
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


def inline_code(lang: str, code: str, ctx: Ctx) -> str:
    """Inline code in another language is never judged safe; the reason names what it does."""
    if DYN in code or PSUB in code:
        return ctx.why(f"{lang} code computed at run time")
    for pattern, what in _CODE_NET:
        if pattern.search(code):
            return f"{what} in {lang} code: {show(code)}"
    return f"runs inline {lang} code, which the classifier cannot judge: {show(code)}"


def _python_module(args: list[str], ctx: Ctx) -> str | None:
    """`python -m module`: installed code, unless written here; http.server exposes files."""
    module = args[0][2:] or (args[1] if len(args) > 1 else "")
    if module == "http.server":
        return ctx.why("serves files over the network (python -m http.server)")
    if python_module_installs(module, args[1 if args[0][2:] else 2 :]):
        return ctx.why("installs packages, which runs their install scripts")
    first = module.split(".", 1)[0]
    if first and (written_then_run(first + ".py", ctx) or written_then_run(first, ctx)):
        return ctx.why("runs a module written earlier in the same command")
    return None


def _deno(args: list[str], ctx: Ctx) -> str | None:
    """`deno eval CODE` / `bun eval CODE` is inline code; `deno run file` runs a file."""
    ops = [a for a in args if not a.startswith("-")]
    if ops[:1] == ["eval"]:
        return inline_code("javascript", " ".join(ops[1:2]), ctx)
    if ops[:1] == ["run"] and len(ops) > 1:
        return _script_file(ops[1], ctx, shell=False)
    return None


@rule(*_CODE_FLAGS, "nodejs", "luajit", "deno")
def _interpreter(base: str, args: list[str], ctx: Ctx) -> str | None:
    lang = "python" if _PYTHON.match(base) else _ALIAS.get(base, base)
    if lang == "deno" or (lang == "bun" and args[:1] == ["eval"]):
        return _deno(args, ctx)
    if lang == "bun" and set(args[:1]) & BUN_VERBS:
        return ctx.why("installs packages, which runs their install scripts")
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
            return _python_module(args[i:], ctx)
        if lang == "perl" and "i" in a and not a.startswith("--"):
            files = args[i + 1 :]
            if any(is_sensitive(f) for f in files if not f.startswith("-")):
                return ctx.why("edits a system or sensitive file in place")
        i += 2 if a in takes else 1
    if codes:
        return inline_code(lang, "\n".join(codes), ctx)
    rest = args[i + (1 if args[i : i + 1] == ["--"] else 0) :]
    if rest and rest[0] != "-":
        return _script_file(rest[0], ctx, shell=False)
    return _fed(ctx, False, lang)

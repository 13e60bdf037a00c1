"""Dangerous-shell-command classifier: parse with tree-sitter-bash, walk every command, fail closed.

`classify(command)` returns a short reason ("recursive delete: rm -rf /") or None. The command
is normalised (NFKC, ANSI escapes and NULs stripped, backslash-newlines joined) and parsed with a
real shell grammar; every command node is checked, including those in `$(…)`, backticks,
process substitutions, pipelines, subshells and functions, and `sh -c '…'` strings recursively.
Words are unquoted before matching (`r''m` is rm). Whatever cannot be resolved statically (a
parse error, `$VAR` or `${IFS}` in command position, eval, a computed redirect target) counts as
dangerous. Both the exact text and its normalised form are analysed, so normalising can only
add reasons, never hide one the shell would act on.
"""

from __future__ import annotations

import codecs
import re
import threading
import time
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from tools.builtin import (  # noqa: F401 - importing each rule module registers its rules
    _shell_archives,
    _shell_builtins,
    _shell_code,
    _shell_commands,
    _shell_minilang,
    _shell_packages,
    _shell_system,
    _shell_vcs,
    _shell_wrappers,
)
from tools.builtin._protected import larkbot_home
from tools.builtin._shell_paths import DYN, PSUB, is_computed, read_reason, show
from tools.builtin._shell_reach import piped_search_reason
from tools.builtin._shell_rules import (
    Ctx,
    ScriptState,
    Stdin,
    check_argv,
    check_assignment,
    working_directory,
)

MAX_CHARS = 20_000  # longer commands are not parsed (asked every time): parsing holds the GIL
MAX_DEPTH = 6
MAX_NODES = 50_000
MAX_SECONDS = 2.0  # a walk slower than this (a loaded machine, a hostile input) fails closed

_LANGUAGE = Language(tree_sitter_bash.language())
_local = threading.local()  # a Parser is not safe to share between threads

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_CONTINUATION = re.compile(r"(?<!\\)((?:\\\\)*)\\\r?\n")  # an odd backslash before a newline
_BRACE = re.compile(r"(?<!\\)\{[^{}\s]*(?:,|\.\.)[^{}\s]*\}")
_SUBSCRIPT = re.compile(r"\[[^\]]*(\$\(|`)")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_ESCAPE = re.compile(r"\\(.)", re.S)
_DQ_ESCAPE = re.compile(r"\\([\"\\$`\n])")
_WRITE_OPS = frozenset((">", ">>", ">|", "&>", "&>>", ">&", "<>"))
_REDIRECT_OPS = _WRITE_OPS | {"<", "<&"}


def _parser() -> Parser:
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = Parser(_LANGUAGE)
    return parser


def join_continuations(text: str) -> str:
    """Join backslash-newline continuations the way bash does (`\\\\` + newline is not one)."""
    return _CONTINUATION.sub(r"\1", text)


def normalize(command: str) -> str:
    """NFKC, strip ANSI escapes and NULs, join backslash-newlines."""
    text = unicodedata.normalize("NFKC", command)
    text = _ANSI.sub("", text).replace("\x00", "").replace("\x01", "")
    return join_continuations(text)


def classify(command: str) -> str | None:
    """Why running `command` is dangerous (a short reason), or None when it is not."""
    # consent_check and consent_always both ask; only short commands are cached (bounded memory)
    try:
        if len(command) > 2048:
            return _classify(command)
        # Relative writes are judged against the working directory, and what is protected
        # against $LARKBOT_HOME, so both are part of the key.
        return _cached(command, working_directory(), larkbot_home())
    except Exception as err:  # a classifier bug must not make a command look safe
        return f"the classifier failed ({type(err).__name__}), so it counts as dangerous"


@lru_cache(maxsize=2048)
def _cached(command: str, cwd: str | None, bot_home: str) -> str | None:
    return _classify(command)


def _classify(command: str) -> str | None:
    exact = join_continuations(command.replace("\x00", "").replace("\x01", ""))
    reason = analyse(exact, 0, None)
    if reason:
        return reason
    normal = normalize(command)
    return analyse(normal, 0, None) if normal != exact else None


def analyse(text: str, depth: int, stdin: Stdin, state: ScriptState | None = None) -> str | None:
    """Parse one script and check every command in it; `stdin` feeds its top-level commands.

    `state` carries what earlier parts of the same command did (cd, files written, values)
    into nested scripts (`sh -c '…'`), so `sh -c 'echo x > s'; sh s` is seen as a whole.
    """
    if depth > MAX_DEPTH:
        return f"shell strings nested too deeply to analyse: {show(text)}"
    if len(text) > MAX_CHARS:
        return f"command too long to analyse ({len(text)} characters)"
    src = text.encode("utf-8", "surrogatepass")
    root = _parser().parse(src if text.isascii() else _ascii_twin(text)).root_node
    if root.has_error:
        return f"the shell grammar cannot parse it, so it counts as dangerous: {show(text)}"
    return _Walker(src, depth, stdin, state or ScriptState()).run(root)


@dataclass(frozen=True)
class _Scope:
    """What a node inherits from its ancestors (computed top-down, so the walk stays linear)."""

    stdin: Stdin
    functions: frozenset[str] = frozenset()
    arith: bool = False  # inside $((…)), ((…)) or for ((…)): variables are evaluated as code
    pipe_owner: Node | None = None  # `cat <<EOF | sh`: the statement a reason should show


_ARITH = frozenset(("arithmetic_expansion", "c_style_for_statement"))
_ARITH_NAMES = frozenset(("variable_name", "word", "simple_expansion", "expansion"))
_STRINGS = frozenset(("raw_string", "string", "ansi_c_string", "concatenation"))
_SAFE_VALUE = re.compile(r"[\w\s+\-*/%<>=!&|^~?:,.()]*")


class _Walker:
    """Visits every node of one parse tree; commands, redirects and functions get checked."""

    def __init__(self, src: bytes, depth: int, stdin: Stdin, state: ScriptState) -> None:
        self.src, self.depth, self.stdin, self.state = src, depth, stdin, state

    def text(self, node: Node) -> str:
        """The node's source text (from the original bytes)."""
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def run(self, root: Node) -> str | None:
        """Check nodes in post-order, so the innermost reason (`curl x | sh` in `$(…)`) wins.

        Post-order is also source order for statements, so a `cd` or a write is recorded in
        the script state before the commands after it are judged.
        """
        stack: list[tuple[Node, bool, _Scope]] = [(root, False, _Scope(self.stdin))]
        seen, deadline = 0, time.monotonic() + MAX_SECONDS
        while stack:
            node, expanded, scope = stack.pop()
            if not expanded:
                seen += 1
                if seen > MAX_NODES:
                    return "command too large to analyse"
                if not seen % 1024 and time.monotonic() > deadline:
                    return "command too slow to analyse, so it counts as dangerous"
                stack.append((node, True, scope))
                kids = node.children
                scopes = self.child_scopes(node, kids, scope)
                stack.extend((kids[i], False, scopes[i]) for i in range(len(kids) - 1, -1, -1))
                continue
            reason = self.check(node, scope)
            if reason:
                return reason
        return None

    def child_scopes(self, node: Node, kids: list[Node], scope: _Scope) -> list[_Scope]:
        """The scope each child inherits: stdin, enclosing functions, arithmetic context."""
        kind = node.type
        inner = _Scope(scope.stdin, scope.functions, scope.arith or kind in _ARITH)
        if kind == "compound_statement" and kids and kids[0].type == "((":
            inner = _Scope(scope.stdin, scope.functions, True)
        if kind in ("command_substitution", "process_substitution"):
            inner = _Scope(None, scope.functions)
        elif kind == "function_definition":
            name = node.child_by_field_name("name")
            named = {self.word(name)} if name is not None else set()
            inner = _Scope(None, scope.functions | named)
        elif kind == "redirected_statement":
            fed = self.redirect_stdin(node.children_by_field_name("redirect"))
            inner = _Scope(fed or scope.stdin, scope.functions, scope.arith, node)
        elif kind == "heredoc_redirect":
            owned = _Scope(scope.stdin, scope.functions, scope.arith, scope.pipe_owner)
            return [owned] * len(kids)
        elif kind == "pipeline":
            whole = scope.pipe_owner or node
            out, shown = [], ""
            for i in range(len(kids)):
                if i and kids[i - 1].type in ("|", "|&"):
                    shown = shown or self.text(whole)
                    out.append(_Scope(("pipe", shown), scope.functions, scope.arith))
                else:
                    out.append(inner)
            return out
        return [inner] * len(kids)

    def check(self, node: Node, scope: _Scope) -> str | None:
        """The reason this node makes the command dangerous, or None."""
        kind = node.type
        if kind == "command":
            return self.command(node, scope)
        if kind == "declaration_command":
            return self.declaration(node, scope)
        if kind == "file_redirect":
            return self.redirect(node)
        if kind == "variable_assignment":
            return self.assignment(node)
        if kind == "for_statement":
            return self.loop_values(node)
        if kind == "expansion" and any(c.type == "@" for c in node.children):
            return self.transformation(node)
        if scope.arith and kind in _ARITH_NAMES:
            return self.arithmetic_operand(node)
        if kind in _STRINGS and _SUBSCRIPT.search(self.word(node)):
            # bash evaluates `a[$(cmd)]` found in a variable when it does arithmetic on it
            return f"quoted text that bash arithmetic would execute: {show(self.text(node))}"
        return None

    # --- words --------------------------------------------------------------------------------

    def word(self, node: Node) -> str:
        """A word's value after quote removal; run-time parts become DYN (PSUB for <(…))."""
        kind = node.type
        if kind == "word":
            return _ESCAPE.sub(_unescape, _BRACE.sub(DYN, self.text(node)))
        if kind == "raw_string":
            return self.text(node)[1:-1]
        if kind == "number":
            return self.text(node)
        if kind in ("concatenation", "command_name"):
            return "".join(self.word(c) for c in node.children)
        if kind == "string":
            return "".join(self._string_part(c) for c in node.children if c.type != '"')
        if kind == "ansi_c_string":
            return _ansi_c(self.text(node)[2:-1])
        if kind == "translated_string":
            return "".join(self.word(c) for c in node.named_children)
        if kind in ("simple_expansion", "expansion"):
            text = self.text(node)
            if text in ("$HOME", "${HOME}"):
                return "~"
            if text == "$!":
                return "$!"  # the job just started in the background: kill $! is routine
            if text in ("$LARKBOT_HOME", "${LARKBOT_HOME}"):
                return larkbot_home()  # judged as the bot's own directory, wherever it is
        if kind == "process_substitution":
            return PSUB
        return DYN

    def _string_part(self, node: Node) -> str:
        if node.type == "string_content":
            return _DQ_ESCAPE.sub(_unescape, self.text(node))
        return self.word(node)

    # --- checks -------------------------------------------------------------------------------

    def ctx(self, node: Node, stdin: Stdin) -> Ctx:
        """The rules' view of this command."""
        return Ctx(self.text(node), self.depth, analyse, stdin, self.state)

    def command(self, node: Node, scope: _Scope) -> str | None:
        """Resolve argv and hand it to the per-command rules."""
        name = node.child_by_field_name("name")
        if name is None:
            return None
        argv = [self.word(name)] + [self.word(a) for a in node.children_by_field_name("argument")]
        fed = self.redirect_stdin(node.children_by_field_name("redirect"))
        ctx = self.ctx(node, fed or scope.stdin)
        if argv[0] in scope.functions:
            return ctx.why("fork bomb (a function that calls itself)")
        return check_argv(argv, ctx)

    def declaration(self, node: Node, scope: _Scope) -> str | None:
        """`declare`, `export`, `local`: their options (assignments are checked on their own)."""
        kids = [c for c in node.children if c.is_named and c.type != "variable_assignment"]
        argv = [self.text(node.children[0])] + [self.word(c) for c in kids]
        return check_argv(argv, self.ctx(node, scope.stdin))

    def redirect_stdin(self, redirects: list[Node]) -> Stdin:
        """What these redirects feed to stdin: a heredoc/herestring, `< <(…)`, or a file."""
        for r in redirects:
            if r.type == "heredoc_redirect":
                body = next((c for c in r.children if c.type == "heredoc_body"), None)
                return ("text", self.text(body) if body is not None else "")
            if r.type == "herestring_redirect" and r.named_children:
                value = self.word(r.named_children[-1])
                return ("text", value) if DYN not in value else ("pipe", self.text(r))
            dest = r.child_by_field_name("destination")
            if r.type == "file_redirect" and dest is not None:
                op = next((c.type for c in r.children if c.type in _REDIRECT_OPS), "")
                target = self.word(dest)
                if target == PSUB:
                    return ("psub", self.text(r))
                if op == "<" and self.state.written and Ctx.written(self.ctx(r, None), target):
                    return ("pipe", self.text(r))  # a script written earlier, fed to stdin
        return None

    def redirect(self, node: Node) -> str | None:
        """Writes outside the workspace, computed targets, /dev/tcp, secrets read from `<`."""
        op = next((c.type for c in node.children if c.type in _REDIRECT_OPS), "")
        dests = node.children_by_field_name("destination")
        if not dests:
            return None
        dest = self.word(dests[0])
        shown = show(self.text(node))
        if dest.startswith(("/dev/tcp/", "/dev/udp/")):
            return f"opens a network connection through a redirect: {shown}"
        ctx = self.ctx(node, None)
        if op in ("<", "<>"):
            why = read_reason(dest, self.state.cwd)
            if why:
                return f"{why}: {shown}"
        if op not in _WRITE_OPS or (op == ">&" and (dest.isdigit() or dest == "-")):
            return None
        if is_computed(dest):
            return f"redirects output to a path computed at run time: {shown}"
        return ctx.write(dest)

    def assignment(self, node: Node) -> str | None:
        """`GIT_PAGER='…' git log`, `export BASH_ENV=…`: variables that carry code."""
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is None:
            return None
        if value is not None and value.type == "arithmetic_expansion":
            text = "0"  # a number, whatever it is
        else:
            text = self.word(value) if value is not None else ""
        return check_assignment(self.text(name), text, self.ctx(node, None))

    def loop_values(self, node: Node) -> str | None:
        """`for f in ~/.larkbot/.secrets/*`: the loop hands protected paths to its body."""
        for value in node.children_by_field_name("value"):
            # `for f in $(find ~ -type f)`: a listing from above the bot's home
            why = read_reason(self.word(value), self.state.cwd)
            why = why or piped_search_reason(self.text(value), self.state.cwd)
            if why:
                return f"{why}: {show(self.text(value))}"
        return None

    def transformation(self, node: Node) -> str | None:
        """`${x@P}` expands x as a prompt, running the command substitutions in its value."""
        if self.text(node).endswith("P}"):
            shown = show(self.text(node))
            return f"${{x@P}} runs the command substitutions in a variable: {shown}"
        return None

    def arithmetic_operand(self, node: Node) -> str | None:
        """A variable bash evaluates as arithmetic: its value must be known and plain."""
        text = self.text(node).strip("${}")
        if not text.replace("_", "a").isalnum() or text[:1].isdigit():
            return None
        value = self.state.values.get(text)
        if value is None or _SAFE_VALUE.fullmatch(value):
            return None
        return f"arithmetic on a value that could carry code (a[$(…)]): {show(self.text(node))}"


def _ascii_twin(text: str) -> bytes:
    """`text` with each non-ASCII character replaced by as many `a` as its UTF-8 bytes.

    tree-sitter-bash 0.25.1 can segfault on `{` followed by a high code point (e.g. U+10FFFF).
    Bash treats every non-ASCII character as an ordinary word character, and so does `a`; byte
    offsets are unchanged, so node texts are still sliced from the original bytes.
    """
    return _NON_ASCII.sub(
        lambda m: "a" * len(m.group().encode("utf-8", "surrogatepass")), text
    ).encode()


def _unescape(m: re.Match[str]) -> str:
    return "" if m.group(1) == "\n" else m.group(1)


def _ansi_c(body: str) -> str:
    """Decode a `$'…'` body (\\x6d, \\155, \\n, …); undecodable means unknown (DYN)."""
    try:
        body = body.replace("\\e", "\\x1b").replace("\\E", "\\x1b").replace("\\'", "'")
        decoded: Any = codecs.decode(body.encode("utf-8", "surrogatepass"), "unicode_escape")
        return str(decoded)
    except (UnicodeError, ValueError):
        return DYN

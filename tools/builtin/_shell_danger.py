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
import unicodedata
from functools import lru_cache
from typing import Any

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from tools.builtin._shell_paths import DYN, PSUB, is_computed, is_sensitive, show
from tools.builtin._shell_rules import Ctx, Stdin, check_argv, check_assignment

MAX_CHARS = 100_000
MAX_DEPTH = 6
MAX_NODES = 50_000

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
_STDIN_SCOPES = frozenset(("program", "command_substitution", "process_substitution"))
_FUNCTION_SCOPES = frozenset(("function_definition",))


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
        return _cached(command) if len(command) <= 2048 else _classify(command)
    except Exception as err:  # a classifier bug must not make a command look safe
        return f"the classifier failed ({type(err).__name__}), so it counts as dangerous"


@lru_cache(maxsize=2048)
def _cached(command: str) -> str | None:
    return _classify(command)


def _classify(command: str) -> str | None:
    exact = join_continuations(command.replace("\x00", "").replace("\x01", ""))
    reason = analyse(exact, 0, None)
    if reason:
        return reason
    normal = normalize(command)
    return analyse(normal, 0, None) if normal != exact else None


def analyse(text: str, depth: int, stdin: Stdin) -> str | None:
    """Parse one script and check every command in it; `stdin` feeds its top-level commands."""
    if depth > MAX_DEPTH:
        return f"shell strings nested too deeply to analyse: {show(text)}"
    if len(text) > MAX_CHARS:
        return f"command too long to analyse ({len(text)} characters)"
    src = text.encode("utf-8", "surrogatepass")
    root = _parser().parse(src if text.isascii() else _ascii_twin(text)).root_node
    if root.has_error:
        return f"the shell grammar cannot parse it, so it counts as dangerous: {show(text)}"
    return _Walker(src, depth, stdin).run(root)


class _Walker:
    """Visits every node of one parse tree; commands, redirects and functions get checked."""

    def __init__(self, src: bytes, depth: int, stdin: Stdin) -> None:
        self.src, self.depth, self.stdin = src, depth, stdin

    def text(self, node: Node) -> str:
        """The node's source text (from the original bytes)."""
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def run(self, root: Node) -> str | None:
        """Check nodes in post-order, so the innermost reason (`curl x | sh` in `$(…)`) wins."""
        stack: list[tuple[Node, bool]] = [(root, False)]
        seen = 0
        while stack:
            node, expanded = stack.pop()
            if not expanded:
                seen += 1
                if seen > MAX_NODES:
                    return "command too large to analyse"
                stack.append((node, True))
                stack.extend((c, False) for c in reversed(node.children))
                continue
            kind = node.type
            reason = None
            if kind == "command":
                reason = self.command(node)
            elif kind == "file_redirect":
                reason = self.redirect(node)
            elif kind == "function_definition":
                reason = self.function(node)
            elif kind == "variable_assignment":
                reason = self.assignment(node)
            elif kind in ("raw_string", "string", "ansi_c_string") and _SUBSCRIPT.search(
                self.word(node)
            ):
                # bash evaluates `a[$(cmd)]` found in a variable when it does arithmetic on it
                return f"quoted text that bash arithmetic would execute: {show(self.text(node))}"
            if reason:
                return reason
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
        if kind in ("simple_expansion", "expansion") and self.text(node) in ("$HOME", "${HOME}"):
            return "~"
        if kind == "process_substitution":
            return PSUB
        return DYN

    def _string_part(self, node: Node) -> str:
        if node.type == "string_content":
            return _DQ_ESCAPE.sub(_unescape, self.text(node))
        return self.word(node)

    # --- checks -------------------------------------------------------------------------------

    def command(self, node: Node) -> str | None:
        """Resolve argv and hand it to the per-command rules."""
        name = node.child_by_field_name("name")
        if name is None:
            return None
        argv = [self.word(name)] + [self.word(a) for a in node.children_by_field_name("argument")]
        ctx = Ctx(self.text(node), self.depth, analyse, self.stdin_of(node))
        return check_argv(argv, ctx)

    def stdin_of(self, node: Node) -> Stdin:
        """What feeds this command's stdin: a heredoc/herestring, `< <(…)`, or a pipe."""
        redirects = list(node.children_by_field_name("redirect"))
        up = node.parent
        while up is not None and up.type == "redirected_statement":
            redirects += up.children_by_field_name("redirect")
            up = up.parent
        for r in redirects:
            if r.type == "heredoc_redirect":
                body = next((c for c in r.children if c.type == "heredoc_body"), None)
                return ("text", self.text(body) if body is not None else "")
            if r.type == "herestring_redirect" and r.named_children:
                value = self.word(r.named_children[-1])
                return ("text", value) if DYN not in value else ("pipe", self.text(r))
            dest = r.child_by_field_name("destination")
            if r.type == "file_redirect" and dest is not None and self.word(dest) == PSUB:
                return ("psub", self.text(r))
        cur = node
        while cur.parent is not None and cur.parent.type not in _STDIN_SCOPES:
            if cur.parent.type == "pipeline":
                prev = cur.prev_sibling
                if prev is not None and prev.type in ("|", "|&"):
                    whole = cur.parent
                    if whole.parent is not None and whole.parent.type == "heredoc_redirect":
                        whole = whole.parent.parent or whole  # `cat <<EOF | sh`: show it all
                    return ("pipe", self.text(whole))
                return None
            if cur.parent.type in _FUNCTION_SCOPES:
                return None
            cur = cur.parent
        return self.stdin if cur.parent is not None and cur.parent.type == "program" else None

    def redirect(self, node: Node) -> str | None:
        """Writes to system or credential files, computed targets, /dev/tcp."""
        op = next((c.type for c in node.children if c.type in _REDIRECT_OPS), "")
        dests = node.children_by_field_name("destination")
        if not dests:
            return None
        dest = self.word(dests[0])
        shown = show(self.text(node))
        if dest.startswith(("/dev/tcp/", "/dev/udp/")):
            return f"opens a network connection through a redirect: {shown}"
        if op not in _WRITE_OPS or (op == ">&" and (dest.isdigit() or dest == "-")):
            return None
        if is_computed(dest):
            return f"redirects output to a path computed at run time: {shown}"
        if is_sensitive(dest, sinks_ok=True):
            return f"overwrites a system or sensitive file: {shown}"
        return None

    def assignment(self, node: Node) -> str | None:
        """`GIT_PAGER='…' git log`, `export BASH_ENV=…`: variables that carry code."""
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is None:
            return None
        text = self.word(value) if value is not None else ""
        ctx = Ctx(self.text(node), self.depth, analyse, None)
        return check_assignment(self.text(name), text, ctx)

    def function(self, node: Node) -> str | None:
        """A function that calls itself (`:(){ :|:& };:`) is a fork bomb."""
        name_node, body = node.child_by_field_name("name"), node.child_by_field_name("body")
        if name_node is None or body is None:
            return None
        name = self.word(name_node)
        stack = [body]
        while stack:
            cur = stack.pop()
            if cur.type == "command":
                called = cur.child_by_field_name("name")
                if called is not None and self.word(called) == name:
                    return f"fork bomb (a function that calls itself): {show(self.text(node))}"
            stack.extend(cur.children)
        return None


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

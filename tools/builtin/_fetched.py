"""Where outside text enters through the shell and files: network commands and fetched files.

A shell command that talks to the network (curl, wget, ssh, git clone/pull, …) returns
output someone else wrote; a file in the inbox (sent in a chat), in a browser download folder
or saved by such a command holds text of unknown origin. Their results carry a provenance
`Source` (`larkbot.policy.provenance`), so while they are in the conversation every side
effect needs the owner's approval. Deliberately coarse and separate from the shell's danger
classifier: a false alarm only asks the owner once more.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from pathlib import Path

from larkbot.sources import Kind, Source
from tools.builtin._paths import inside, resolve

NETWORK_COMMANDS = frozenset(
    {"curl", "wget", "ssh", "scp", "sftp", "ftp", "rsync", "nc", "ncat", "netcat", "telnet"}
    | {"socat", "websocat", "http", "https", "xh", "aria2c", "lynx", "w3m", "links", "gh"}
)
GIT_NETWORK = frozenset({"clone", "pull", "fetch", "ls-remote"})
BROWSER_FOLDER_PREFIX = "larkbot-browser-"  # tools/browser/engine.py: the session's folder
MAX_REMEMBERED = 1000
_WORD = re.compile(r"[^\s;|&()<>`$'\"]+")


def _words(command: str) -> list[str]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:  # unbalanced quotes: still look at every word
        return _WORD.findall(command)


def network_command(command: str) -> bool:
    """True when `command` (anywhere in it: pipes, `&&`, `$(…)`) runs a network client."""
    names = [Path(w).name for w in _words(command) + _WORD.findall(command)]
    if any(n in NETWORK_COMMANDS for n in names):
        return True
    return "git" in names and any(n in GIT_NETWORK for n in names[names.index("git") :])


def written_paths(command: str) -> list[Path]:
    """Best effort: the files and folders a network command saves (curl -o, wget -O, clone)."""
    words, found = _words(command), []
    for i, word in enumerate(words):
        value = words[i + 1] if i + 1 < len(words) else ""
        if word in ("-o", "--output", "-O", "--output-document", "-P", "--directory-prefix"):
            if value and not value.startswith("-") and "://" not in value:
                found.append(value)
        elif word.startswith(("--output=", "--output-document=")):
            found.append(word.split("=", 1)[1])
        elif word == "clone" and i and Path(words[i - 1]).name == "git":
            rest = [w for w in words[i + 1 :] if not w.startswith("-")]
            if len(rest) > 1 and rest[1] not in (";", "&&", "||", "|", "&"):
                found.append(rest[1])
            elif rest:
                found.append(Path(rest[0].rstrip("/")).name.removesuffix(".git"))
    urls = [w for w in words if "://" in w]
    if any(w in ("-O", "--remote-name") for w in words) or "wget" in words:
        found += [u.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] for u in urls]
    return [resolve(os.path.join(os.getcwd(), p)) for p in found if p and p != "-"]


class FetchedFiles:
    """The paths network commands saved in this process (kept in `ToolRuntime.services`)."""

    def __init__(self) -> None:
        self.paths: list[Path] = []

    def remember(self, paths: list[Path]) -> None:
        """Note `paths` (files or folders) as written by a network command."""
        self.paths = [*self.paths, *(p for p in paths if p not in self.paths)][-MAX_REMEMBERED:]

    def holds(self, path: Path) -> bool:
        """True when `path` is one of them or inside one."""
        return any(inside(path, p) for p in self.paths)


def shell_source(command: str) -> Source:
    """How a card names a network command's output."""
    shown = command if len(command) <= 80 else command[:79] + "…"
    return Source(Kind.TOOL, f"shell `{shown}` (network output not written by the owner)")


def shell_sources(
    command: str, named: list[str], home: Path, fetched: FetchedFiles
) -> tuple[Source, ...]:
    """What no owner wrote in a command's output: the network, or a file it names (`cat` of
    a received file); a network command's saved files are remembered for later reads."""
    found = [file_source(resolve(p), home, fetched) for p in named]
    if network_command(command):
        fetched.remember(written_paths(command))
        found.insert(0, shell_source(command))
    return tuple(dict.fromkeys(s for s in found if s is not None))


def file_source(path: Path, home: Path, fetched: FetchedFiles | None) -> Source | None:
    """A Source when `path` holds text of unknown origin: received, downloaded or fetched."""
    if inside(path, resolve(str(home / "inbox"))):
        return Source(Kind.FILE, f"the file {path} (received in a chat, not written by you)")
    tmp = resolve(tempfile.gettempdir())
    if any(p.parent == tmp and p.name.startswith(BROWSER_FOLDER_PREFIX) for p in path.parents):
        return Source(Kind.FILE, f"the file {path} (downloaded by the browser)")
    if fetched is not None and fetched.holds(path):
        return Source(Kind.FILE, f"the file {path} (saved by a network command)")
    return None

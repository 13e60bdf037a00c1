"""Recursive reads that descend into the bot's own directory from above it.

`grep -r key ~`, `rg token /`, `cp -r ~ /tmp/h`, `tar czf x.tgz ~`, `find ~ -exec cat {} +` and
`find / | xargs cat` never name `$LARKBOT_HOME`, yet read every file in it. A read is judged by
where it starts: a directory that holds `$LARKBOT_HOME` (or a glob that may be one), including
the working directory when no path is given and the call runs above the bot's home.
"""

from __future__ import annotations

import re

from tools.builtin._protected import glob_reach, larkbot_home, under
from tools.builtin._shell_paths import DYN, PSUB, absolute, flags, options, words

Reader = tuple[bool, list[str]]  # (reads recursively, the paths it starts from)

REASON = "reads every file below a directory holding the bot's own secrets ($LARKBOT_HOME)"
_GREPS = words("grep egrep fgrep zgrep rgrep")
_SEARCHERS = words("rg ag ack ack-grep")
# GNU grep 3.x and cp (coreutils 9) take any unique prefix of a long option (`grep --recur`), so
# their words are resolved against these tables; rg, ag and ack do not (`rg --hidd` is an error).
_GREP = options(
    "after-context= basic-regexp before-context= binary binary-files= byte-offset color=? "
    "colour=? context= count dereference-recursive devices= directories= exclude= "
    "exclude-dir= exclude-from= extended-regexp file= files-with-matches files-without-match "
    "fixed-regexp fixed-strings group-separator= help ignore-case include= initial-tab "
    "invert-match label= line-buffered line-number line-regexp max-count= no-filename "
    "no-group-separator no-ignore-case no-messages null null-data only-matching perl-regexp "
    "quiet recursive regexp= silent text unix-byte-offsets version with-filename word-regexp",
    "ABCDXdefm",
    "colour:color fixed-regexp:fixed-strings silent:quiet",
)
_CP = options(
    "archive attributes-only backup=? context=? copy-contents dereference force help "
    "interactive link no-clobber no-dereference no-preserve= no-target-directory "
    "one-file-system parents path preserve=? recursive reflink=? remove-destination sparse= "
    "strip-trailing-slashes suffix= symbolic-link target-directory= update verbose version",
    "St",
    "path:parents",
)
_FIND_RUNS = words("-exec -execdir -ok -okdir -fprint -fprint0 -fprintf -fls")
# A command that lists paths below a root, at the start of a pipeline stage or a $(…).
_LISTER = re.compile(
    r"(?:^|[|;&(`]\s*)(find|fd|fdfind|du|tree|rg|locate|plocate|mlocate)\b([^|;&)`]*)"
)


def holds_bot_home(word: str, cwd: str | None) -> bool:
    """True when `word` names `$LARKBOT_HOME`, a directory above it, or a glob that may."""
    where = absolute(word, cwd)
    if where is None:
        return False
    bot = larkbot_home()
    return under(bot, where) or glob_reach(where, bot) is not None


def _search_roots(operands: list[str], explicit_pattern: bool) -> list[str]:
    roots = operands if explicit_pattern else operands[1:]
    return roots or ["."]


def _may_recurse(action: str) -> bool:
    """Whether grep's directory action `action` is, or may turn out at run time to be, recurse."""
    return DYN in action or PSUB in action or "recurse".startswith(action)


def _reader(base: str, args: list[str]) -> Reader:
    """Whether this command reads recursively, and from where.

    A long option grep or cp would refuse (unknown, or a prefix of several) counts as
    recursive: the command then fails, so asking costs nothing, and a table gap is not a hole.
    """
    # The shared GNU split: after `--` a `-…` word is the pattern, not flags (`rg -- -----BEGIN ~`).
    f = flags(args, _GREP if base in _GREPS else _CP if base == "cp" else None)
    shorts, longs, ops = f.shorts, f.longs, f.operands
    pattern_given = (  # then every operand is a root; an unresolved option may have been -e
        bool({"e", "f"} & shorts)
        or bool(f.unknown)
        or any(x.startswith(("--regexp", "--file")) for x in longs)
    )
    if base in _GREPS:
        recursive = base == "rgrep" or bool({"r", "R"} & shorts) or bool(f.unknown)
        recursive = recursive or bool({"--recursive", "--dereference-recursive"} & longs)
        # grep reads the action with argmatch, which also takes a prefix: `-d rec` is recurse;
        # an action only known at run time (`-d $A`) may be recurse, so it counts as one.
        actions = (f.values.get(k) for k in ("-d", "--directories"))
        recursive = recursive or any(a is not None and _may_recurse(a) for a in actions)
        return recursive, _search_roots(ops, pattern_given)
    if base in _SEARCHERS:
        return True, _search_roots(ops, pattern_given or "--files" in longs)
    if base in ("cp", "scp", "rsync"):
        recursive = bool({"r", "R", "a"} & shorts) or bool({"--recursive", "--archive"} & longs)
        recursive = recursive or bool(f.unknown)
        every = "t" in shorts or any(x.startswith("--target-directory") for x in longs)
        return recursive, ops if every else ops[:-1]
    if base == "zip":
        # zip takes a unique prefix too: --recurse-path(s) is -r, --recurse-patt(erns) is -R.
        recursive = bool({"r", "R"} & shorts) or any(x.startswith("--recurse-pat") for x in longs)
        return recursive, ops[1:]
    if base in ("fd", "fdfind"):  # `fd PATTERN ROOT -x cmd` runs cmd on every file found
        runs = {"x", "X"} & shorts or {"--exec", "--exec-batch"} & longs
        return bool(runs), _search_roots(ops, pattern_given)
    if base == "find":
        roots = []
        for a in args:
            if a.startswith(("-", "(", "!", ")")):
                break
            roots.append(a)
        return any(a in _FIND_RUNS for a in args), roots or ["."]
    return False, []


def recursive_read_reason(base: str, args: list[str], cwd: str | None) -> str | None:
    """Why this command reads the bot's own files by descending into them, or None."""
    recursive, roots = _reader(base, args)
    if recursive and any(holds_bot_home(r, cwd) for r in roots):
        return REASON
    return None


def piped_search_reason(text: str, cwd: str | None) -> str | None:
    """`find ~ | xargs cat`, `cat $(find ~ -name key)`, `locate key | while read f; …`: a
    listing from above the bot's home hands its paths to a command that reads them."""
    for m in _LISTER.finditer(text):
        if m.group(1).endswith("locate"):
            return REASON  # the whole filesystem's index
        for word in m.group(2).split():
            if not word.startswith("-") and holds_bot_home(word.strip("'\""), cwd):
                return REASON
    return None

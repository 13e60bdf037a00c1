"""What the model is told about skills: a compact list in the system prompt, and which one fits.

Only names and descriptions are resident; bodies arrive through `skill_read`. The request is
matched against them as `find_tools` matches tools (word overlap, CJK bigrams), and the best
fits are named so the model reads the guide before doing the work.
"""

from __future__ import annotations

from larkbot.find_tools import tokens
from larkbot.skill_store.skill import Skill

MAX_LISTED = 30  # skills named in the prompt; skill_read() with no name lists them all
MAX_SHOWN_DESCRIPTION = 200  # characters of each description in the prompt
MAX_SUGGESTED = 2
# Words that say nothing about which guide fits.
_STOP = frozenset(
    (  # noqa: SIM905
        "a an and are as at be by can do for from how i in into is it me my of on or our please "
        "the this that to use using want we what when with you your new make get set"
    ).split()
)


def _stem(word: str) -> str:
    """'clicking', 'clicked', 'clicks' → 'click': enough for a request to meet a description."""
    if not word.isascii() or len(word) < 5:
        return word
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _words(text: str) -> set[str]:
    return {_stem(w) for w in tokens(text) - _STOP}


def score(query: set[str], words: set[str], name: set[str], rare: set[str]) -> int:
    """Shared words: a word of the name counts 3, a word only this skill has 2, any other 1."""
    return sum(3 if w in name else 2 if w in rare else 1 for w in query & (words | name))


def relevant(skills: list[Skill], request: str) -> list[Skill]:
    """The skills that fit `request` best: named outright, or sharing a telling word or two."""
    wanted, lowered = _words(request), request.lower()
    words = [_words(s.description) for s in skills]
    seen: dict[str, int] = {}
    for bag in words:
        for w in bag:
            seen[w] = seen.get(w, 0) + 1
    rare = {w for w, n in seen.items() if n == 1}
    scored = []
    for skill, bag in zip(skills, words, strict=True):
        points = score(wanted, bag, _words(skill.name), rare)
        scored.append((points + (5 if skill.name.lower() in lowered else 0), skill))
    ranked = sorted((pair for pair in scored if pair[0] >= 2), key=lambda p: -p[0])
    return [s for _, s in ranked[:MAX_SUGGESTED]]


def _short(text: str) -> str:
    if len(text) <= MAX_SHOWN_DESCRIPTION:
        return text
    return text[: MAX_SHOWN_DESCRIPTION - 1].rstrip() + "…"


def prompt_section(skills: list[Skill], request: str, *, fast: bool = False) -> str:
    """The system prompt's lines about skills ('' when there are none); names only when fast."""
    if not skills:
        return ""
    listed, more = skills[:MAX_LISTED], len(skills) - MAX_LISTED
    fits = relevant(skills, request)
    hint = f" For this request read first: {', '.join(repr(s.name) for s in fits)}." if fits else ""
    if fast:  # the short prompt stays short: names only, the tool found through find_tools
        names = ", ".join(s.name for s in listed) + (f" (+{more})" if more > 0 else "")
        how = "find_tools('skill_read'), then skill_read(name)"
        return f"Skills (how-to guides; {how}): {names}.{hint}"
    lines = [
        "Skills (how-to guides): call skill_read(name) before a task one covers; "
        "skill_read(name, file) reads a file it mentions."
    ]
    lines += [f"- {s.name}: {_short(s.description)}" for s in listed]
    if more > 0:
        lines.append(f"- … and {more} more: skill_read() lists them all")
    return "\n".join(lines) + ("\n" + hint.strip() if hint else "")

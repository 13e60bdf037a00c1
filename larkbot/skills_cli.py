"""`larkbot skills list | add PATH | remove NAME`: the skills the model can read on demand."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from larkbot.config import Settings
from larkbot.logs import configure_logging
from larkbot.skill_store import SkillError, SkillStore, user_skills_dir
from larkbot.skill_store.install import add, remove

USAGE = {"add": "PATH (a folder with a SKILL.md)", "remove": "NAME (see `larkbot skills list`)"}


def listing(store: SkillStore) -> str:
    """One line per skill: name, where it comes from, description."""
    skills = store.skills()
    if not skills:
        return "No skills."
    width = max(len(s.name) for s in skills)
    rows = []
    for s in skills:
        origin = "built-in" if s.builtin else str(s.folder)
        rows.append(f"{s.name.ljust(width)}  {s.description}\n{' ' * width}  ({origin})")
    where = store.user_dir or "(none)"
    rows.append(f"{len(skills)} skills; add yours with `larkbot skills add PATH` (into {where})")
    return "\n".join(rows)


def run_skills(settings: Settings, args: argparse.Namespace) -> int:
    """Entry point of `larkbot skills`; returns the exit code."""
    configure_logging("warning", "console")  # a skipped, broken skill is worth a line
    store = SkillStore(user_skills_dir(settings.home))
    if args.action == "list":
        print(listing(store))
        return 0
    if not args.target:
        print(f"larkbot skills {args.action}: give {USAGE[args.action]}", file=sys.stderr)
        return 2
    try:
        if args.action == "add":
            skill = add(store, Path(args.target).expanduser())
            print(f"Added skill {skill.name!r} ({skill.folder}); the bot sees it on its next turn.")
        else:
            folder = remove(store, args.target)
            print(f"Removed skill {args.target!r} ({folder}).")
    except (SkillError, OSError) as err:
        print(f"larkbot skills {args.action}: {err}", file=sys.stderr)
        return 1
    return 0

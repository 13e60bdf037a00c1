"""`skills add PATH` and `skills remove NAME`: the operator's shelf under `$LARKBOT_HOME/skills`.

Installing is the operator's act (the CLI, or the files themselves): there is no chat path to
it, and `$LARKBOT_HOME` is a protected path for the file and shell tools. A folder is checked
before anything is copied, copied beside its final place, then renamed into it, so a failed copy
never leaves half a skill; the shelf is owner-only (0700).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from larkbot.skill_store.skill import NAME, Skill, SkillError, parse_skill
from larkbot.skill_store.store import SkillStore

MAX_FILES = 500
MAX_TOTAL_BYTES = 16 * 1024 * 1024


def check_source(src: Path) -> Skill:
    """The skill in folder `src` (or the folder of a SKILL.md given directly), once it passes."""
    if src.is_file() and src.name == "SKILL.md":
        src = src.parent
    if not src.is_dir():
        raise SkillError(f"{src}: not a folder (give the folder that holds SKILL.md)")
    skill = parse_skill(src)
    count = total = 0
    for base, dirs, files in os.walk(src):
        for name in dirs + files:
            path = Path(base, name)
            if path.is_symlink():
                raise SkillError(f"{path}: symbolic links are not copied; replace it with the file")
        for name in files:
            count += 1
            total += Path(base, name).stat().st_size
    if count > MAX_FILES or total > MAX_TOTAL_BYTES:
        raise SkillError(
            f"{src}: {count} files, {total // 1024} KB; a skill holds at most {MAX_FILES} files "
            f"and {MAX_TOTAL_BYTES // 2**20} MB"
        )
    return skill


def add(store: SkillStore, src: Path) -> Skill:
    """Copy the skill folder `src` to `store.user_dir/<name>`; SkillError when it cannot be."""
    if store.user_dir is None:
        raise SkillError("no skills folder to install into")
    skill = check_source(src)
    existing = store.get(skill.name)
    if existing is not None and existing.builtin:
        raise SkillError(f"{skill.name!r} is a built-in skill; give yours another name")
    shelf = store.user_dir
    shelf.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(shelf, 0o700)
    target = shelf / skill.name
    if target.exists() or target.is_symlink():
        raise SkillError(f"{target} exists: `larkbot skills remove {skill.name}` first")
    staging = Path(tempfile.mkdtemp(prefix=f".{skill.name}-", dir=shelf))
    try:
        shutil.copytree(skill.folder, staging / "x", symlinks=True)
        (staging / "x").rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return parse_skill(target)


def remove(store: SkillStore, name: str) -> Path:
    """Delete the operator's skill `name` (a broken one by its folder's name), never a built-in."""
    skill = store.get(name)
    if skill is not None and skill.builtin:
        raise SkillError(f"{name!r} is built in (shipped with larkbot) and cannot be removed")
    folder = skill.folder if skill else None
    if folder is None and store.user_dir and NAME.match(name):
        folder = store.user_dir / name  # a skill too broken to list is still removable
    if folder is None or not (folder.is_dir() or folder.is_symlink()):
        raise SkillError(f"no skill {name!r} (see `larkbot skills list`)")
    if folder.is_symlink():
        folder.unlink()
    else:
        shutil.rmtree(folder)
    return folder

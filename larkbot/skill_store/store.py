"""The skills the model may read: the built-in ones shipped in the package, then the operator's.

Built-ins live in `larkbot/skills/<name>/SKILL.md`; operators add theirs under
`$LARKBOT_HOME/skills/<name>/` (`larkbot skills add PATH`). A broken skill is logged once and
skipped; a user skill cannot take a built-in's name. Parsed skills are cached by the SKILL.md's
mtime and size, so listing them every turn costs a directory scan.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from larkbot.logs import get_logger
from larkbot.skill_store.skill import (
    MAX_FILE_BYTES,
    NAME,
    Skill,
    SkillError,
    parse_skill,
    read_limited,
)

log = get_logger("larkbot.skills")

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "skills"
MAX_SKILLS = 200  # folders scanned per directory: a skills dir is a shelf, not a dump


def inside(path: Path, root: Path) -> bool:
    """True when `path` is `root` or below it (both resolved)."""
    return path == root or root in path.parents


@dataclass
class SkillStore:
    """Finds, caches and reads skills; `user_dir` None means built-ins only."""

    user_dir: Path | None = None
    builtin_dir: Path = BUILTIN_DIR
    _cache: dict[Path, tuple[tuple[int, int], Skill | None]] = field(
        default_factory=dict, init=False, repr=False
    )
    _warned: set[tuple[Path, str]] = field(default_factory=set, init=False, repr=False)

    def skills(self) -> list[Skill]:
        """Every usable skill, built-ins first, each group sorted by folder name."""
        found: dict[str, Skill] = {}
        for root, builtin in ((self.builtin_dir, True), (self.user_dir, False)):
            for skill in self._scan(root, builtin) if root else []:
                if skill.name in found:
                    self._warn(skill.folder, f"the name {skill.name!r} is already taken")
                    continue
                found[skill.name] = skill
        return list(found.values())

    def get(self, name: str) -> Skill | None:
        """The skill called `name`, or None."""
        if not NAME.match(name):
            return None
        return next((s for s in self.skills() if s.name == name), None)

    def read(self, name: str, file: str | None = None) -> str:
        """A skill's body, or one of its resource files; SkillError when it cannot be had."""
        skill = self.get(name)
        if skill is None:
            raise SkillError(f"no skill {name!r}")
        if not file or file == "SKILL.md":
            return skill.body()
        return read_limited(resource_path(skill, file))

    def _scan(self, root: Path, builtin: bool) -> list[Skill]:
        try:
            entries = sorted(
                (e for e in os.scandir(root) if not e.name.startswith(".")), key=lambda e: e.name
            )
        except OSError:
            return []
        if len(entries) > MAX_SKILLS:
            self._warn(root, f"more than {MAX_SKILLS} folders; the rest are ignored")
        skills = []
        for entry in entries[:MAX_SKILLS]:
            skill = self._load(Path(entry.path), builtin) if entry.is_dir() else None
            if skill is not None:
                skills.append(skill)
        return skills

    def _load(self, folder: Path, builtin: bool) -> Skill | None:
        try:
            st = (folder / "SKILL.md").stat()
        except OSError:
            self._warn(folder, "no SKILL.md")
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        cached = self._cache.get(folder)
        if cached and cached[0] == stamp:
            return cached[1]
        skill: Skill | None = None
        try:
            confined(folder / "SKILL.md", folder)
            skill = parse_skill(folder, builtin=builtin)
        except (SkillError, OSError) as err:
            log.warning("skill_skipped", folder=str(folder), reason=str(err))
        self._cache[folder] = (stamp, skill)
        return skill

    def _warn(self, where: Path, reason: str) -> None:
        if (where, reason) not in self._warned:
            self._warned.add((where, reason))
            log.warning("skill_skipped", folder=str(where), reason=reason)


def confined(path: Path, folder: Path) -> Path:
    """`path` resolved, when it stays inside `folder` (symlinks followed); else SkillError."""
    real, root = path.resolve(), folder.resolve()
    if not inside(real, root):
        raise SkillError(f"{path.name} points outside the skill's folder")
    return real


def resource_path(skill: Skill, file: str) -> Path:
    """Where resource `file` of `skill` is: relative, no '..', inside the folder, a small file."""
    rel = PurePosixPath(file.replace("\\", "/"))
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise SkillError(f"{file!r}: give a path relative to the skill's folder, without '..'")
    real = confined(skill.folder / rel, skill.folder)
    if not real.is_file():
        listed = ", ".join(skill.resources(50)) or "none"
        raise SkillError(f"skill {skill.name!r} has no file {file!r}; its files: {listed}")
    if real.stat().st_size > MAX_FILE_BYTES:
        raise SkillError(f"{file} is larger than {MAX_FILE_BYTES // 1024} KB")
    return real

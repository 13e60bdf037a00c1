"""One skill: a folder with a `SKILL.md` (YAML front matter `name`, `description`; a Markdown body).

The layout is the Agent Skills format the wider agent ecosystem uses, so a skill written for
another agent can be dropped in as it is; extra front-matter keys (`license`, `allowed-tools`,
`metadata`, …) are kept but not interpreted.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

MAX_FILE_BYTES = 64 * 1024  # SKILL.md and each resource file skill_read returns
MAX_DESCRIPTION = 1024  # characters, as the format allows
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


class SkillError(ValueError):
    """A skill that cannot be used, with a reason an operator can act on."""


@dataclass(frozen=True)
class Skill:
    """A parsed skill: what the model is shown (name, description) and where the rest lies."""

    name: str
    description: str
    folder: Path
    builtin: bool

    @property
    def doc(self) -> Path:
        """Its SKILL.md."""
        return self.folder / "SKILL.md"

    def body(self) -> str:
        """SKILL.md without its front matter."""
        return split_front_matter(read_limited(self.doc))[1].strip("\n")

    def resources(self, limit: int = 100) -> list[str]:
        """Its other files, relative to its folder (what `skill_read(name, file)` takes)."""
        found: list[str] = []
        for base, dirs, files in os.walk(self.folder):  # symlinked folders are not entered
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            rel = Path(base).relative_to(self.folder)
            for name in sorted(files):
                path = (rel / name).as_posix()
                if path != "SKILL.md" and not name.startswith("."):
                    found.append(path)
                if len(found) >= limit:
                    return found
        return found


def read_limited(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """The file as UTF-8 text; SkillError when it is larger than `limit` bytes or not text."""
    with path.open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise SkillError(f"{path.name} is larger than {limit // 1024} KB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError(f"{path.name} is not UTF-8 text") from None


def split_front_matter(text: str) -> tuple[dict[str, object], str]:
    """The YAML front matter as a mapping, and the body after it."""
    match = _FRONT.match(text.lstrip("\ufeff"))
    if not match:
        raise SkillError("SKILL.md must start with YAML front matter between '---' lines")
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError as err:
        raise SkillError(f"front matter is not valid YAML: {str(err).splitlines()[0]}") from None
    if not isinstance(meta, dict):
        raise SkillError("front matter must be a mapping with name and description")
    return meta, text.lstrip("\ufeff")[match.end() :]


def parse_skill(folder: Path, *, builtin: bool = False) -> Skill:
    """Read and check `folder/SKILL.md`; SkillError says what is wrong."""
    doc = folder / "SKILL.md"
    if not doc.is_file():
        raise SkillError(f"{folder.name}: no SKILL.md")
    meta, _ = split_front_matter(read_limited(doc))
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not NAME.match(name):
        raise SkillError(
            f"front matter needs `name`: 1-64 letters, digits, '-' or '_' (got {repr(name)[:80]})"
        )
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{name}: front matter needs a non-empty `description`")
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(f"{name}: description is longer than {MAX_DESCRIPTION} characters")
    return Skill(name, description, folder, builtin)

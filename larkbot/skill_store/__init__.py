"""Skills: folders with a SKILL.md the model reads on demand (built-in and the operator's)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from larkbot.skill_store.catalog import prompt_section, relevant
from larkbot.skill_store.skill import MAX_FILE_BYTES, Skill, SkillError, parse_skill
from larkbot.skill_store.store import BUILTIN_DIR, SkillStore

__all__ = [
    "BUILTIN_DIR",
    "MAX_FILE_BYTES",
    "Skill",
    "SkillError",
    "SkillStore",
    "parse_skill",
    "prompt_section",
    "relevant",
    "skills_prompt",
    "store_for",
    "user_skills_dir",
]


def user_skills_dir(home: Path) -> Path:
    """Where the operator's skills live: `$LARKBOT_HOME/skills`."""
    return home / "skills"


@lru_cache(maxsize=8)
def store_for(home: Path) -> SkillStore:
    """The (caching) store of built-in skills and those under `home`, one per home."""
    return SkillStore(user_skills_dir(home))


def skills_prompt(home: Path, disabled: list[str], request: str, *, fast: bool = False) -> str:
    """The system prompt's skills lines ('' with no skills, or with skill_read switched off)."""
    if "skill_read" in disabled:
        return ""
    return prompt_section(store_for(home).skills(), request, fast=fast)

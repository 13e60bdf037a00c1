"""SkillReadTool: skills read on demand, e.g. skill_read('ui-card'), skill_read('x', file='ref.md').

A skill is a folder with a SKILL.md (larkbot/skill_store); the built-in ones ship in the
package, the operator's live under `$LARKBOT_HOME/skills`. Only names and descriptions sit in the
system prompt; the body and the skill's own files arrive through this tool, confined to the
skill's folder (no '..', no symlink out of it) and at most 64 KB each.
"""

from __future__ import annotations

import asyncio
from typing import Any

from larkbot.skill_store import SkillError, SkillStore, store_for
from tools.base import BaseTool, ToolResult
from tools.runtime import ToolRuntime


def list_skills(store: SkillStore) -> str:
    """One line per skill: its name and description."""
    lines = [f"- {s.name}: {s.description}" for s in store.skills()]
    return "\n".join(lines) if lines else "No skills are installed."


def read_skill(store: SkillStore, name: str, file: str | None = None) -> ToolResult:
    """A skill's body (with its files named), one of its files, or an error saying what exists."""
    skill = store.get(name)
    if skill is None:
        return ToolResult(f"Error: no skill {name!r}. Available:\n{list_skills(store)}", True)
    try:
        text = store.read(name, file)
    except (SkillError, OSError) as err:
        return ToolResult(f"Error: {err}", is_error=True)
    if file:
        return ToolResult(text)
    extra = skill.resources(50)
    if extra:
        text += f"\n\n(Files of this skill, for skill_read({name!r}, file=…): {', '.join(extra)})"
    return ToolResult(text)


class SkillReadTool(BaseTool):
    """Reads a skill (how-to guide) or one of its files; with no name, lists them."""

    name = "skill_read"
    description = (
        "Read a skill (a how-to guide) by name, e.g. 'ui-card' for card formats; `file` reads "
        "a file the skill mentions. Call with no name to list the available skills."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Skill name, e.g. ui-card"},
            "file": {
                "type": "string",
                "description": "Optional: a file inside the skill's folder, e.g. reference.md",
            },
        },
    }
    no_compress = True  # formats and examples must arrive exactly

    def __init__(self, store: SkillStore | None = None) -> None:
        self.store = store or SkillStore()

    async def run(self, **kw: Any) -> ToolResult:
        """List skills, or return one (or one of its files)."""
        name, file = kw.get("name"), kw.get("file")
        if not name:
            return ToolResult(await asyncio.to_thread(list_skills, self.store))
        return await asyncio.to_thread(read_skill, self.store, str(name), file and str(file))


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The skill_read tool, over the built-in skills and those under `$LARKBOT_HOME/skills`."""
    return [SkillReadTool(store_for(rt.home))]

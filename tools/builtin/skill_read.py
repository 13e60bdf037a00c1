"""SkillReadTool: on-demand Markdown docs packaged in larkbot/skills, e.g. skill_read('ui-card')."""

from __future__ import annotations

import asyncio
import re
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

from tools.base import BaseTool, ToolResult
from tools.runtime import ToolRuntime

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def skills_dir() -> Traversable:
    """The packaged skills directory."""
    return files("larkbot").joinpath("skills")


def list_skills() -> str:
    """One line per skill: its name and the first line of its document."""
    lines = []
    for doc in sorted(skills_dir().iterdir(), key=lambda d: d.name):
        if doc.name.endswith(".md") and doc.is_file():
            first = next(
                (ln for ln in doc.read_text(encoding="utf-8").splitlines() if ln.strip()), ""
            )
            lines.append(f"- {doc.name[:-3]}: {first.lstrip('# ').strip()}")
    return "\n".join(lines) if lines else "No skills are packaged."


def read_skill(name: str) -> ToolResult:
    """A skill document by name, or an error listing the available ones."""
    doc = skills_dir().joinpath(f"{name}.md")
    if not _NAME.match(name) or not doc.is_file():
        return ToolResult(f"Error: no skill '{name}'. Available:\n{list_skills()}", is_error=True)
    return ToolResult(doc.read_text(encoding="utf-8"))


class SkillReadTool(BaseTool):
    """Reads a packaged how-to document; with no name, lists them."""

    name = "skill_read"
    description = (
        "Read a packaged how-to document (skill) by name, e.g. 'ui-card' for card formats. "
        "Call with no name to list the available skills."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"name": {"type": "string", "description": "Skill name, e.g. ui-card"}},
    }
    no_compress = True  # formats and examples must arrive exactly

    async def run(self, **kw: Any) -> ToolResult:
        """List skills, or return one."""
        name = kw.get("name")
        if not name:
            return ToolResult(await asyncio.to_thread(list_skills))
        return await asyncio.to_thread(read_skill, str(name))


def provide(rt: ToolRuntime) -> list[BaseTool]:
    """The skill_read tool."""
    return [SkillReadTool()]

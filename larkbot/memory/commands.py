"""`/memory` (`/记忆`) and `/forget ID|all` (`/忘记`): what the bot remembers about me here.

Channel-free: Lark's command handler and `larkbot chat` call these with the speaker's context.
"""

from __future__ import annotations

from larkbot.context import RequestContext
from larkbot.memory.service import MemoryError, MemoryService
from larkbot.memory.store import Memory

USAGE = "Usage: /memory (what I remember about you here), /memory undo ID, /forget ID | all"


def _line(memory: Memory, person: str) -> str:
    if memory.scope == "me":
        return f"- [{memory.id}] {memory.content}"
    by = "you" if memory.author_id == person else memory.author_name or memory.author_id
    return f"- [{memory.id}] (this chat, saved by {by}) {memory.content}"


async def show(service: MemoryService, ctx: RequestContext, zh: bool = False) -> str:
    """The speaker's own memories and this chat's."""
    person = service.person(ctx)
    found = await service.visible(ctx)
    if not found:
        return (
            "我还没有记住关于你的任何事。"
            if zh
            else "I don't remember anything about you here yet."
        )
    head = (
        "我记得的（/忘记 ID 删除一条）："
        if zh
        else "What I remember here (/forget ID removes one):"
    )
    mine = [m for m in found if m.scope == "me"] + [m for m in found if m.scope == "chat"]
    return "\n".join([head, *(_line(m, person) for m in mine)])


async def memory_command(
    service: MemoryService | None, name: str, arg: str, ctx: RequestContext
) -> str:
    """Run `/memory [undo ID]` or `/forget ID|all` for the speaker of `ctx`."""
    zh = arg == "zh"
    if service is None:
        return "记忆功能未开启（memory.enabled）。" if zh else "Memory is off (memory.enabled)."
    try:
        if name == "/memory":
            verb, _, rest = arg.partition(" ")
            if verb == "undo" and rest.strip():
                back = await service.undo(ctx, rest)
                return f"Restored {back} earlier version(s)." if back else "Nothing to undo."
            return await show(service, ctx, zh) if arg in ("", "zh") else USAGE
        target = "" if zh else arg.strip()
        if target.lower() in ("all", "全部"):
            gone = await service.forget_all(ctx)
            return f"Forgot {gone} memories about you." if gone else "There was nothing to forget."
        if not target:
            return "用法：/忘记 ID 或 /忘记 全部" if zh else USAGE
        memory = await service.forget(ctx, target)
        return f"Forgot [{memory.id}] {memory.content}"
    except MemoryError as err:
        return str(err)


async def local_command(recall: object, text: str, ctx: RequestContext) -> str | None:
    """`/memory …` or `/forget …` typed in `larkbot chat`: the reply; None for anything else."""
    name, _, arg = text.strip().partition(" ")
    if name not in ("/memory", "/forget"):
        return None
    service = recall if isinstance(recall, MemoryService) else None
    return await memory_command(service, name, arg.strip(), ctx)

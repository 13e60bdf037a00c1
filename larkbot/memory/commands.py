"""`/memory` (`/记忆`) and `/forget ID|all` (`/忘记`): what the bot remembers about me here.

Channel-free: Lark's command handler and `larkbot chat` call these with the speaker's context.
"""

from __future__ import annotations

from larkbot.context import RequestContext
from larkbot.memory.service import MemoryRefused, MemoryService
from larkbot.memory.store import Memory

NOTHING = "I don't remember anything about you here yet."
NOTHING_ZH = "我还没有记住关于你的任何事。"
HEAD = "What I remember here (/forget ID removes one):"
HEAD_ZH = "我记得的（/忘记 ID 删除一条）："
PRIVATE = " memories about you: send me /memory in a direct chat to see them"
PRIVATE_ZH = " 条关于你的记忆：私聊我发送 /记忆 查看"
USAGE = "Usage: /memory (what I remember about you here), /memory undo ID, /forget ID | all"


def _line(memory: Memory, person: str) -> str:
    if memory.scope == "me":
        return f"- [{memory.id}] {memory.content}"
    by = "you" if memory.author_id == person else memory.author_name or memory.author_id
    return f"- [{memory.id}] (this chat, saved by {by}) {memory.content}"


async def show(service: MemoryService, ctx: RequestContext, zh: bool = False) -> str:
    """The speaker's own memories and this chat's; in a group only a count of their own."""
    person = service.person(ctx)
    found = await service.visible(ctx)
    if not found:
        return NOTHING_ZH if zh else NOTHING
    mine = [_line(m, person) for m in found if m.scope == "me"]
    chat = [_line(m, person) for m in found if m.scope == "chat"]
    if ctx.chat_type == "group" and mine:  # the reply is read by the whole group
        hint = PRIVATE_ZH if zh else PRIVATE
        mine = [f"({len(mine)}{hint})"]
    return "\n".join([HEAD_ZH if zh else HEAD, *mine, *chat])


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
        shown = "" if ctx.chat_type == "group" else f" {memory.content}"
        return f"Forgot [{memory.id}]{shown}"
    except MemoryRefused as err:
        return str(err)


async def local_command(recall: object, text: str, ctx: RequestContext) -> str | None:
    """`/memory …` or `/forget …` typed in `larkbot chat`: the reply; None for anything else."""
    name, _, arg = text.strip().partition(" ")
    if name not in ("/memory", "/forget"):
        return None
    service = recall if isinstance(recall, MemoryService) else None
    return await memory_command(service, name, arg.strip(), ctx)

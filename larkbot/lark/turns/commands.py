"""Chat commands answered without the model: /new, /stop, /whoami, /help, /claim <code>, /status,
/auth (the sender's own Lark authorization, larkbot/lark/oauth/command.py).

Also /memory and /forget ID|all (`larkbot/memory/commands.py`).
Chinese aliases: /新对话 (/new), /停止 (/stop), /帮助 (/help), /记忆, /忘记; help answers in
the language of the command used. In a group the conversation is shared by everyone, so only an
owner may reset it with /new. /stop itself is acted on when it arrives (`Dispatcher`), not in turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from larkbot.context import RequestContext
from larkbot.lark.arrival.inbound import InboundMessage
from larkbot.lark.owners import Owners
from larkbot.memory import MemoryService
from larkbot.memory.commands import memory_command

HELP = """I'm an AI assistant. Ask me anything in a direct message, or @-mention me in a group.
I read images, files (PDF, Word, Excel, PowerPoint, text) and quoted or forwarded messages.
Commands:
/new: start a fresh conversation (forgets this chat's history and approvals; owners only in groups)
/stop: stop the answer being worked on in this chat
/memory: what I remember about you here; /forget ID (or all) removes it
/whoami: show your open_id and whether you own this bot
/help: this message
/claim <code>: become the owner with the pairing code from the server log (DM only, once)
/status: the model, its fallbacks, token usage and the month's Lark API calls (owners only)
/auth: let me use your Lark docs, sheets, Bases and tasks as you (/auth status, /auth revoke)"""

HELP_ZH = """我是 AI 助手。私聊直接提问，群聊里请 @ 我。
我能看图片、读文件（PDF、Word、Excel、PowerPoint、文本），也能理解引用和合并转发的消息。
命令：
/新对话（/new）：开始新对话，清除本聊天的历史和授权（群聊中仅限机器人主人）
/停止（/stop）：停止本聊天中正在进行的回答
/记忆（/memory）：我记得的关于你的事；/忘记 ID（或 全部）删除
/whoami：查看你的 open_id，以及你是否是机器人的主人
/帮助（/help）：显示本说明
/claim <配对码>：用服务日志中的配对码成为主人（仅限私聊，一次）
/状态（/status）：模型、备用模型、token 用量和本月飞书 API 调用量（仅限主人）
/授权（/auth）：允许我以你的身份使用你的飞书文档、表格、多维表格和任务（/取消授权 撤销）"""

COMMANDS = frozenset(
    {"/new", "/stop", "/whoami", "/help", "/claim", "/status", "/memory", "/forget", "/auth"}
)
ALIASES = {
    "/新对话": "/new",
    "/停止": "/stop",
    "/帮助": "/help",
    "/状态": "/status",
    "/记忆": "/memory",
    "/忘记": "/forget",
    "/授权": "/auth",
}
REVOKE_ALIAS = "/取消授权"  # /auth revoke


def parse_command(text: str) -> tuple[str, str] | None:
    """("/name", "rest") when the message is one of our commands, else None (goes to the model).

    A Chinese alias keeps its own spelling in the rest as "zh" so help can answer in Chinese.
    """
    head, _, rest = text.strip().replace("／", "/", 1).partition(" ")
    name = head.lower()
    if name == REVOKE_ALIAS:
        return "/auth", "revoke"
    if name in ALIASES:
        return ALIASES[name], rest.strip() or "zh"
    return (name, rest.strip()) if name in COMMANDS else None


Status = Callable[[str], Awaitable[str]]  # session_id -> the /status reply
Auth = Callable[[str, InboundMessage], Awaitable[str]]  # (arg, message) -> the /auth reply

UNSIGNED_REFUSAL = (
    "This bot has no encrypt key, so it cannot verify that messages really come from Lark; "
    "it does nothing on anyone's behalf until lark.encrypt_key is set."
)


class Commands:
    """Runs a parsed command and returns the text to reply."""

    def __init__(
        self,
        owners: Owners,
        reset: Callable[[str], Awaitable[None]],
        status: Status | None = None,
        memory: MemoryService | None = None,
        auth: Auth | None = None,
    ) -> None:
        self.owners = owners
        self.memory = memory
        self.reset = reset  # Agent.reset: history, consent grants, activated tools
        self.status = status  # model_status.status_text for a session
        self.auth = auth  # AuthCommand.run: the sender's own Lark authorization

    async def run(self, name: str, arg: str, msg: InboundMessage, session_id: str) -> str:
        """Execute `name` for the sender of `msg` in `session_id`."""
        owner = msg.signed and await self.owners.check(msg.sender_open_id)
        if name == "/new":
            if not msg.is_dm and not owner:
                return (
                    "This group's conversation is shared by everyone here, so only an owner "
                    "of the bot can reset it."
                )
            await self.reset(session_id)
            return "已开始新对话。" if arg == "zh" else "Started a fresh conversation."
        if name == "/whoami":
            role = "the owner of this bot" if owner else "not an owner of this bot"
            return f"Your open_id is {msg.sender_open_id}; you are {role}."
        if name == "/claim":
            if not arg:
                return "Usage: /claim <code> (the pairing code is in the server log)."
            if not msg.signed:
                return UNSIGNED_REFUSAL
            result = await self.owners.claim(msg.sender_open_id, arg, msg.is_dm)
            return result.message
        if name == "/status":
            if not await self.owners.check(msg.sender_open_id):
                return "Only an owner of this bot may see /status."
            if self.status is None:
                return "Status is not available here."
            return await self.status(session_id)
        if name in ("/memory", "/forget"):
            ctx = RequestContext(
                "lark", session_id, msg.sender_open_id, owner, msg.chat_id, msg.chat_type
            )
            return await memory_command(self.memory, name, arg, ctx)
        if name == "/auth":
            if self.auth is None:
                return "Lark authorization is not available here."
            return await self.auth(arg, msg)
        return HELP_ZH if arg == "zh" else HELP

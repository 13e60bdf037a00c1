"""The user scopes `/auth` asks for, what each allows in plain words, and the accounts host."""

from __future__ import annotations

from typing import Any

from larkbot.scopes import user_scopes

OFFLINE = "offline_access"  # without it no refresh token comes back

# How a card says each scope (English, Chinese); which scopes are asked for comes from the scope
# manifest (`larkbot.scopes.user_scopes`, the enabled tools' user scopes)
READ: dict[str, tuple[str, str]] = {
    "docx:document:readonly": ("read your documents", "查看你的文档"),
    "docs:document.content:read": ("export documents as Markdown", "导出文档内容"),
    "wiki:node:read": ("open wiki pages", "查看知识库页面"),
    "docs:doc:readonly": ("read your older (legacy) documents", "查看旧版文档"),
    "sheets:spreadsheet:readonly": ("read your sheets", "查看你的电子表格"),
    "bitable:app:readonly": ("read your Bases", "查看你的多维表格"),
    "task:task:read": ("see your tasks", "查看你的任务"),
    "search:docs:read": ("search your documents", "搜索你的云文档"),
}
WRITE: dict[str, tuple[str, str]] = {
    "docx:document:create": ("create documents", "创建文档"),
    "docx:document:write_only": ("add to documents", "编辑文档"),
    "sheets:spreadsheet": ("edit sheets", "编辑电子表格"),
    "bitable:app": ("edit Bases", "编辑多维表格"),
    "task:task:write": ("create and complete tasks", "创建和完成任务"),
}
WORDS: dict[str, tuple[str, str]] = {
    **READ,
    **WRITE,
    OFFLINE: ("stay signed in (refresh)", "保持授权（自动续期）"),
}

FEISHU_OPEN, LARK_OPEN = "https://open.feishu.cn", "https://open.larksuite.com"
FEISHU_ACCOUNTS, LARK_ACCOUNTS = "https://accounts.feishu.cn", "https://accounts.larksuite.com"


def workspace_settings(settings: Any) -> tuple[bool, str]:
    """(`workspace.enabled`, `workspace.members`), the contract's defaults when absent."""
    section = getattr(settings, "workspace", None)
    if section is None:
        return True, "read"
    return bool(getattr(section, "enabled", True)), str(getattr(section, "members", "read"))


def is_read_scope(scope: str) -> bool:
    """A scope that only reads (`…:read`, `…:readonly`): a member with `members: read` gets it."""
    return scope.endswith((":read", ":readonly"))


def requested(settings: Any, owner: bool) -> list[str]:
    """What a person's `/auth` asks for: the enabled tools' scopes they may use, and refresh."""
    enabled, members = workspace_settings(settings)
    if not enabled or (not owner and members == "off"):
        return [OFFLINE]
    wanted = [s for s in user_scopes(settings) if s != OFFLINE]
    if not (owner or members == "write"):
        wanted = [s for s in wanted if is_read_scope(s)]
    return [OFFLINE, *wanted]


def in_words(scopes: list[str], lang: str) -> str:
    """The scopes as a reader would say them ("read your documents, edit sheets")."""
    index = 1 if lang == "zh" else 0
    words = [WORDS[s][index] if s in WORDS else s for s in scopes if s != OFFLINE]
    return ("、" if lang == "zh" else ", ").join(words) or ("（无）" if lang == "zh" else "(none)")


def named(scopes: list[str], lang: str) -> str:
    """The scopes in words with their names, for a person and the admin they ask
    ("read your documents (docx:document:readonly), wiki:node:create"); plain text, as a
    text message shows backticks as they are."""
    index = 1 if lang == "zh" else 0
    said = [f"{WORDS[s][index]} ({s})" if s in WORDS else s for s in scopes]
    return ("、" if lang == "zh" else ", ").join(said)


def accounts_host(lark: Any) -> str:
    """The OAuth host: `lark.accounts_domain`, else the brand's accounts host, else `domain`."""
    explicit = str(getattr(lark, "accounts_domain", "") or "")
    if explicit:
        return explicit.rstrip("/")
    domain = str(lark.domain).rstrip("/")
    return {FEISHU_OPEN: FEISHU_ACCOUNTS, LARK_OPEN: LARK_ACCOUNTS}.get(domain, domain)

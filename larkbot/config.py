"""Typed configuration: YAML with ${VAR} expansion, a default for every key, errors name it."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, SecretStr, ValidationError, field_validator

from larkbot.config_env import Expansion, expand_env, overlay_env, with_saved
from larkbot.config_sections import (
    BrowserConfig,
    ComputerUseConfig,
    FallbackConfig,
    KnowledgeConfig,
    LimitsConfig,
    LoggingConfig,
    MemoryConfig,
    PriceConfig,
    ProviderName,
    SchedulerConfig,
    Section,
    WebConfig,
    WorkspaceConfig,
)
from larkbot.errors import ConfigError


class ServerConfig(Section):
    """`server:` where `serve` listens."""

    host: str = "0.0.0.0"
    port: int = Field(8080, ge=0, le=65535)
    drain_seconds: float = Field(30.0, gt=0)
    body_read_seconds: float = Field(10.0, gt=0)
    # a connection that has not sent a whole request header by then is closed
    header_timeout_seconds: float = Field(10.0, gt=0)
    idle_timeout_seconds: float = Field(60.0, gt=0)  # keep-alive with no request: closed
    max_connections: int = Field(256, ge=1)  # also kept below half the descriptor limit
    # request bodies held in memory before their signature is checked, all requests together
    unverified_body_bytes: int = Field(8 * 1024 * 1024, ge=1024 * 1024)


class LarkConfig(Section):
    """`lark:` the Lark/Feishu app and how the bot behaves in chats."""

    app_id: str = ""
    app_secret: SecretStr = SecretStr("")
    verification_token: SecretStr = SecretStr("")
    encrypt_key: SecretStr = SecretStr("")
    domain: str = "https://open.feishu.cn"
    # OAuth and app-registration host; "": derived from `domain` (larkbot/setup/registration.py)
    accounts_domain: str = ""
    mode: Literal["webhook", "websocket"] = "webhook"
    replicas: int = Field(1, ge=1)  # serve processes on these credentials (long-connection check)
    group_policy: Literal["mention", "all"] = "mention"
    answer_at_all: bool = False
    streaming: bool = True
    stream_updates_per_second: float = Field(2.0, gt=0, le=10)
    max_concurrent_turns: int = Field(16, ge=1)
    turn_timeout_seconds: float = Field(600.0, gt=0)
    approval_timeout_seconds: float = Field(300.0, gt=0)
    replay_window_seconds: int = Field(300, ge=1)
    # a claimed message whose process died is taken over (by any replica) once this runs out
    claim_lease_seconds: float = Field(60.0, ge=1)
    max_download_bytes: int = Field(30 * 1024 * 1024, gt=0)  # images/files users send
    topic_follow_up: bool = True  # in a topic the bot answered in, no new @ needed
    monthly_call_budget: int = Field(10_000, ge=0)  # Lark API calls a month; 0 = unlimited
    # an approval still unanswered this long is buzzed (urgent_app) to its owner once; 0: never
    urgent_after_minutes: float = Field(10.0, ge=0)
    # the bot menu (`application.bot.menu_v6`): event_key -> a command (/new …) or a prompt;
    # entries given here are added to (or replace) the defaults of `larkbot/lark/events/menu.py`
    menu: dict[str, str] = Field(default_factory=dict)

    @property
    def configured(self) -> bool:
        """True when the app credentials are present."""
        return bool(self.app_id and self.app_secret.get_secret_value())


class OwnerConfig(Section):
    """`owner:` who may cause side effects, and which private-data tools are shared."""

    open_ids: list[str] = Field(default_factory=list)
    share: dict[str, Literal["everyone"] | list[str]] = Field(default_factory=dict)

    @field_validator("open_ids", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        """`ou_a,ou_b` (LARKBOT_OWNER_OPEN_IDS, or `${…}` in YAML) is a list too."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value


class LLMConfig(Section):
    """`llm:` any OpenAI-compatible Chat Completions endpoint."""

    base_url: str = "https://api.openai.com/v1"
    api_key: SecretStr = SecretStr("")
    model: str = "gpt-4o-mini"
    timeout_seconds: float = Field(120.0, gt=0)
    max_retries: int = Field(3, ge=0, le=10)
    stream: bool = True
    temperature: float | None = None
    max_tokens: int | None = None
    vision: Literal["auto"] | bool = "auto"  # images reach the model as image parts
    provider: ProviderName = "auto"  # auto: from base_url (larkbot/providers/profiles.py)
    thinking: Literal["auto", "on", "off"] = "auto"  # auto: the model's default
    reasoning_effort: str = ""  # e.g. high (DeepSeek, OpenAI o-series); "" : not sent
    reasoning_echo: Literal["auto", "tool_turns", "returned", "all", "never"] = "auto"
    show_thinking: Literal["never", "dm", "always"] = "never"  # a collapsible panel
    context_tokens: int = Field(0, ge=0)  # 0: the model's window from the profile table
    fallbacks: list[FallbackConfig] = Field(default_factory=list)
    prices: dict[str, PriceConfig] = Field(default_factory=dict)  # model -> price per 1M tokens
    transcription_model: str = ""  # e.g. whisper-1: voice messages via /audio/transcriptions


class StorageConfig(Section):
    """`storage:` the database and the optional Redis for several replicas."""

    url: str = "sqlite:///${LARKBOT_HOME}/larkbot.db"
    redis_url: str = ""


class WebSearchConfig(Section):
    """`tools.web_search:` provider and its credentials."""

    provider: Literal["duckduckgo", "tavily", "searxng"] = "duckduckgo"
    api_key: SecretStr = SecretStr("")
    base_url: str = ""
    timeout_seconds: float = Field(15.0, gt=0)


class WebFetchConfig(Section):
    """`tools.web_fetch:` limits and the SSRF switch."""

    allow_private_networks: bool = False
    timeout_seconds: float = Field(20.0, gt=0)
    max_bytes: int = Field(5 * 1024 * 1024, gt=0)
    max_redirects: int = Field(5, ge=0, le=20)
    extract_seconds: float = Field(10.0, gt=0)  # then the regex fallback (in a killable process)


class ShellConfig(Section):
    """`tools.shell:` limits of the shell tool and what its commands may see."""

    max_timeout_seconds: float = Field(600.0, gt=0)
    env: list[str] = Field(default_factory=list)  # names passed on beyond PATH HOME LANG …
    cgroup: Literal["auto", "off"] = "auto"  # a cgroup v2 per call where possible
    # bubblewrap around each call (own PID namespace, the bot's secrets, database and config
    # hidden): auto where it works, bwrap required (else commands are refused), or off
    sandbox: Literal["auto", "bwrap", "off"] = "auto"


class LarkCliConfig(Section):
    """`tools.lark_cli:` the official lark-cli binary wrapped by the Lark tools."""

    binary: str = "lark-cli"
    timeout_seconds: float = Field(30.0, gt=0)


class ToolsConfig(Section):
    """`tools:` per-tool settings; re-read when the file changes."""

    web_search: WebSearchConfig = Field(default_factory=WebSearchConfig)
    web_fetch: WebFetchConfig = Field(default_factory=WebFetchConfig)
    shell: ShellConfig = Field(default_factory=ShellConfig)
    lark_cli: LarkCliConfig = Field(default_factory=LarkCliConfig)
    timeout_seconds: float = Field(120.0, gt=0)
    disabled: list[str] = Field(default_factory=list)


class McpServerConfig(Section):
    """One MCP server: stdio (`command`, `args`, `env`) or streamable HTTP (`url`, `headers`)."""

    command: list[str] | str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float = Field(60.0, gt=0)
    read_only: bool = False  # only then are its tools free of side effects (shareable)
    trusted: bool = False  # its results count as the owner's own text (no approval raised)


class McpConfig(Section):
    """`mcp:` MCP servers whose tools are registered at start."""

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)


class AgentConfig(Section):
    """`agent:` the loop's budgets."""

    max_steps: int = Field(12, ge=1, le=100)
    fast_path: bool = False
    history_max_chars: int = Field(60_000, ge=1000)
    history_max_tokens: int = Field(0, ge=0)  # 0: half the model's context window
    max_tool_calls_per_reply: int = Field(16, ge=1, le=128)  # the rest refused, with a reason
    system_prompt_extra: str = ""


class Settings(Section):
    """The whole configuration file."""

    server: ServerConfig = Field(default_factory=ServerConfig)
    lark: LarkConfig = Field(default_factory=LarkConfig)
    owner: OwnerConfig = Field(default_factory=OwnerConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    scheduler: SchedulerConfig = Field(default_factory=SchedulerConfig)
    knowledge: KnowledgeConfig = Field(default_factory=KnowledgeConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    web: WebConfig = Field(default_factory=WebConfig)
    browser: BrowserConfig = Field(default_factory=BrowserConfig)
    computer_use: ComputerUseConfig = Field(default_factory=ComputerUseConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    home: Path = Field(default_factory=lambda: larkbot_home(), exclude=True)
    source: Path | None = Field(default=None, exclude=True)
    # the file `source` would be when none existed at load: created later, it is read live
    lookup: Path | None = Field(default=None, exclude=True)
    unset_vars: list[tuple[str, str]] = Field(default_factory=list, exclude=True)

    @property
    def secrets_dir(self) -> Path:
        """Where `get_secret` and the secrets consent rule look."""
        return self.home / ".secrets"

    @property
    def knowledge_dir(self) -> Path:
        """The knowledge base directory, created on demand by its users."""
        return Path(self.knowledge.dir).expanduser()


def larkbot_home() -> Path:
    """`$LARKBOT_HOME`, defaulting to `~/.larkbot`."""
    return Path(os.environ.get("LARKBOT_HOME") or "~/.larkbot").expanduser()


def resolve_config_path(explicit: str | os.PathLike[str] | None) -> tuple[Path, bool]:
    """The config file to read and whether the user named it (a named file must exist)."""
    if explicit:
        return Path(explicit).expanduser(), True
    env = os.environ.get("LARKBOT_CONFIG")
    if env:
        return Path(env).expanduser(), True
    return larkbot_home() / "config.yaml", False


# Keys whose values are never echoed in an error: an unquoted numeric secret fails as "not a
# string", and the message must not print it into a terminal or a log.
_SECRET_KEY = re.compile(r"secret|token|key|passw|credential|auth|cookie|env|header", re.I)


def _format_validation_error(err: ValidationError, source: Path | None) -> str:
    lines = [f"Invalid configuration{f' in {source}' if source else ''}:"]
    for e in err.errors()[:12]:
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        got = e.get("input")
        shown = "" if isinstance(got, dict | list) or got is None else f" (got {got!r})"
        if shown and any(_SECRET_KEY.search(str(p)) for p in e["loc"]):
            shown = " (value not shown; quote it in YAML if it is a number)"
        if e["type"] == "extra_forbidden":
            lines.append(f"  {key}: unknown key — check its spelling against config.example.yaml")
        else:
            lines.append(f"  {key}: {e['msg']}{shown}")
    lines.append("Fix the key(s) above; config.example.yaml lists every key with its default.")
    return "\n".join(lines)


def parse_settings(raw: dict[str, Any], source: Path | None = None) -> Settings:
    """Validate an already-loaded YAML mapping into Settings, expanding environment variables."""
    home = larkbot_home()
    env = with_saved(dict(os.environ), home)  # what `larkbot setup` saved fills unset variables
    env.setdefault("LARKBOT_HOME", str(home))
    if not env["LARKBOT_HOME"]:
        env["LARKBOT_HOME"] = str(home)
    seen = Expansion()
    data = overlay_env(expand_env(raw, env, seen=seen), env)  # env values stay verbatim
    try:
        settings = Settings.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format_validation_error(err, source)) from None
    settings.home = home
    settings.source = source
    settings.unset_vars = seen.unset
    settings.storage.url = expand_env(settings.storage.url, env)
    settings.knowledge.dir = expand_env(settings.knowledge.dir, env)
    return settings


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"Cannot read config file {path}: {err.strerror}") from None
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        # the problem only: PyYAML's full message quotes the line, which may hold a secret
        problem = getattr(err, "problem", None) or type(err).__name__
        raise ConfigError(
            f"Config file {path} is not valid YAML{where}: {problem}.\n"
            "  Fix: indent with spaces, put a space after each ':', and quote values that "
            "contain ': ' or ' #'; config.example.yaml shows the layout."
        ) from None
    if not isinstance(raw, dict):
        raise ConfigError(f"Config file {path} must be a mapping of sections (server:, lark:, …)")
    return raw


def load_settings(explicit: str | os.PathLike[str] | None = None) -> Settings:
    """Load settings by the lookup order: --config, $LARKBOT_CONFIG, $LARKBOT_HOME/config.yaml."""
    path, named = resolve_config_path(explicit)
    if not path.exists():
        if named:
            raise ConfigError(
                f"Config file {path} does not exist. "
                "Copy config.example.yaml there, or drop --config/LARKBOT_CONFIG to use defaults."
            )
        settings = parse_settings({}, None)
        settings.lookup = path
        return settings
    return parse_settings(_read_yaml(path), path)


class LiveSettings:
    """Settings whose `tools:` section is re-read when the file changes (mtime, at most 1/s).

    With no file at start, the path the lookup would have read is watched: a config created
    there later is picked up like an edit.
    """

    def __init__(self, settings: Settings, check_interval: float = 1.0) -> None:
        self._settings = settings
        self._path = settings.source or settings.lookup
        self._interval = check_interval
        self._checked = time.monotonic()
        self._mtime = self._stat()

    def _stat(self) -> float | None:
        try:
            return self._path.stat().st_mtime if self._path else None
        except OSError:
            return None

    def get(self) -> Settings:
        """The current settings, refreshing `tools:` if the file changed since the last check."""
        now = time.monotonic()
        if self._path is None or now - self._checked < self._interval:
            return self._settings
        self._checked = now
        mtime = self._stat()
        if mtime is not None and mtime != self._mtime:
            self._mtime = mtime
            try:
                fresh = parse_settings(_read_yaml(self._path), self._path)
            except ConfigError:
                from larkbot.logs import get_logger

                get_logger(__name__).warning("config_reload_failed", exc_info=True)
                return self._settings
            self._settings = self._settings.model_copy(update={"tools": fresh.tools})
        return self._settings

    def tools(self) -> ToolsConfig:
        """Shortcut for `get().tools`."""
        return self.get().tools

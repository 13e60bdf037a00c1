"""Config sections kept out of config.py: web, browser, desktop, LLM fallbacks, prices, limits,
the scheduler."""

from __future__ import annotations

import ipaddress
import os
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

ProviderName = Literal[
    "auto", "openai", "deepseek", "qwen", "kimi", "glm", "doubao", "ollama", "vllm", "azure"
]


class Section(BaseModel):
    """Base of every config section: unknown keys are mistakes, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class WebConfig(Section):
    """`web:` the web chat page and its API (`/`, `/chat`, `/api/*`)."""

    enabled: bool = True
    # LARKBOT_WEB_TOKEN works with no config file at all; a `web.token` in the file wins
    token: SecretStr = Field(
        default_factory=lambda: SecretStr(os.environ.get("LARKBOT_WEB_TOKEN", ""))
    )
    consent_timeout_seconds: float = Field(300.0, gt=0, le=86_400)
    # reverse proxies (IPs or CIDRs) whose X-Forwarded-For names the client; others' is ignored
    trusted_proxies: list[str] = Field(default_factory=list)

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for item in value:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(
                    f"{item!r} is not an IP address or CIDR (e.g. 10.0.0.0/8)"
                ) from None
        return value


class BrowserConfig(Section):
    """`browser:` the Chromium the browser tools drive (Debian's `chromium` by default)."""

    executable_path: str = ""
    idle_seconds: float = Field(600.0, gt=0)
    max_tabs_per_session: int = Field(8, ge=1, le=64)
    max_sessions: int = Field(8, ge=1, le=64)  # open contexts; the least recently used goes
    sandbox: Literal["auto", "on", "off"] = "auto"  # auto: Chromium's sandbox unless root
    downloads: bool = False  # on: files a page downloads are kept per session and sent as files
    max_download_mb: float = Field(25.0, gt=0, le=1024)  # larger downloads are deleted


class ComputerUseConfig(Section):
    """`computer_use:` the X display the `computer_use` tool sees and operates."""

    enabled: bool = False
    display: str = ""  # "" with start_xvfb: the server picks a free display number
    start_xvfb: bool = False
    size: str = Field("1280x800", pattern=r"^\d{2,5}x\d{2,5}$")  # WIDTHxHEIGHT of that Xvfb
    settle_seconds: float = Field(0.5, ge=0, le=10)  # after an action, before the screenshot


class FallbackConfig(Section):
    """One entry of `llm.fallbacks`: another endpoint tried when the primary keeps failing."""

    base_url: str
    api_key: SecretStr = SecretStr("")
    model: str
    provider: ProviderName = "auto"


class PriceConfig(Section):
    """One entry of `llm.prices` (per model): money per million tokens."""

    input: float = Field(0.0, ge=0)
    output: float = Field(0.0, ge=0)
    cached_input: float | None = Field(None, ge=0)  # None: same as input
    currency: str = "USD"


class LimitsConfig(Section):
    """`limits:` what one non-owner (and one chat) may ask of the bot; owners are not limited."""

    queued_per_sender: int = Field(3, ge=1)  # turns waiting or running for one non-owner
    turns_per_minute_per_sender: int = Field(6, ge=1)
    queued_per_chat: int = Field(10, ge=1)  # non-owners' turns waiting or running in one chat
    turns_per_minute_per_chat: int = Field(20, ge=1)
    owner_reserved_turns: int = Field(2, ge=0)  # of lark.max_concurrent_turns, owners' only


class SchedulerConfig(Section):
    """`scheduler:` timezone, misfire policy and the leases of scheduled tasks."""

    enabled: bool = True
    timezone: str = "Asia/Shanghai"
    misfire_grace_seconds: int = Field(600, ge=1)
    # The leader's lease and each job run's claim: a replica that dies holding them is taken
    # over once they run out (renewed every poll / third of the lease while it lives).
    lease_seconds: float = Field(30.0, gt=0)
    poll_seconds: float = Field(5.0, gt=0)

    def zone(self) -> ZoneInfo | None:
        """`timezone` as a ZoneInfo; None when it names none (each caller picks its fallback)."""
        try:
            return ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            return None

    @model_validator(mode="after")
    def _lease_outlives_polls(self) -> SchedulerConfig:
        """A live leader renews at every poll, so the lease must span more than two of them."""
        if self.lease_seconds <= 2 * self.poll_seconds:
            raise ValueError(
                f"lease_seconds ({self.lease_seconds:g}) must exceed twice poll_seconds "
                f"({self.poll_seconds:g})"
            )
        return self


class MemoryConfig(Section):
    """`memory:` long-term memory per person (and per chat), recalled every turn."""

    enabled: bool = True
    recall_tokens: int = Field(600, ge=50, le=8000)  # budget of the recalled block per turn
    pinned: int = Field(3, ge=0, le=20)  # profile facts recalled whatever the message says
    max_per_person: int = Field(200, ge=1)  # active memories one person may hold
    max_per_chat: int = Field(200, ge=1)  # active chat-scope memories of one chat
    max_chars: int = Field(500, ge=20, le=4000)  # one memory's text
    consolidate: bool = True  # the nightly pass (needs an LLM; leader replica only)
    consolidate_at: str = Field("03:30", pattern=r"^\d{2}:\d{2}$")  # HH:MM, scheduler.timezone


class EmbeddingsConfig(Section):
    """`knowledge.embeddings:` an OpenAI-compatible /embeddings endpoint."""

    base_url: str = ""
    api_key: SecretStr = SecretStr("")
    model: str = "text-embedding-3-small"
    timeout_seconds: float = Field(10.0, gt=0)


class KnowledgeConfig(Section):
    """`knowledge:` where notes live and optional semantic ranking."""

    dir: str = "${LARKBOT_HOME}/knowledge"
    embeddings: EmbeddingsConfig = Field(default_factory=EmbeddingsConfig)


class WorkspaceConfig(Section):
    """`workspace:` the Lark workspace tools, acting as the person who asks."""

    enabled: bool = True
    # what non-owners may do with their own authorization (owners may always read and write)
    members: Literal["off", "read", "write"] = "read"


class LoggingConfig(Section):
    """`logging:` level and format (auto: console on a terminal, else json; chat: console)."""

    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "json", "console"] = "auto"

"""Config sections kept out of config.py: web, browser, desktop, LLM fallbacks and prices."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

ProviderName = Literal[
    "auto", "openai", "deepseek", "qwen", "kimi", "glm", "doubao", "ollama", "vllm", "azure"
]


class Section(BaseModel):
    """Base of every config section: unknown keys are mistakes, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class WebConfig(Section):
    """`web:` the web chat page and its API (`/`, `/chat`, `/api/*`)."""

    enabled: bool = True
    token: SecretStr = SecretStr("")


class BrowserConfig(Section):
    """`browser:` the Chromium the browser tools drive (Debian's `chromium` by default)."""

    executable_path: str = ""
    idle_seconds: float = Field(600.0, gt=0)
    max_tabs_per_session: int = Field(8, ge=1, le=64)


class ComputerUseConfig(Section):
    """`computer_use:` the X display the `computer_use` tool sees and operates."""

    enabled: bool = False
    display: str = ""
    start_xvfb: bool = False
    size: str = "1280x800"


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

"""The small error hierarchy of larkbot; a channel's own errors live with it
(`lark/api/errors.py`)."""

from __future__ import annotations


class LarkBotError(Exception):
    """Base class of every error larkbot raises on purpose."""


class ConfigError(LarkBotError):
    """A configuration mistake; the message names the key and the fix."""


class ProviderError(LarkBotError):
    """The LLM endpoint failed in a way retries did not fix."""

    def __init__(self, message: str, status: int | None = None, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable  # 429/5xx/timeouts/connection: another endpoint may answer

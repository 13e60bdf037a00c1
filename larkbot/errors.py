"""The small error hierarchy of larkbot."""

from __future__ import annotations

from larkbot.lark.hints import hint_for  # the code → hint table lives with the Lark channel


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


class LarkAPIError(LarkBotError):
    """The Lark Open Platform answered with a non-zero code."""

    def __init__(self, code: int, msg: str, log_id: str = "", http_status: int = 200) -> None:
        self.hint = hint_for(code, msg)
        super().__init__(
            f"Lark API error {code}: {msg}"
            + (f" (log_id {log_id})" if log_id else "")
            + (f" → {self.hint}" if self.hint else "")
        )
        self.code = code
        self.msg = msg
        self.log_id = log_id
        self.http_status = http_status
        self.unanswered = False  # the call went out but no answer came (e.g. a read timeout)

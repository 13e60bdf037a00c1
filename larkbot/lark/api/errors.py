"""The Lark channel's error: a non-zero answer from the Open Platform, with the operator's hint."""

from __future__ import annotations

from larkbot.errors import LarkBotError
from larkbot.lark.api.hints import CREDENTIALS_FIX, hint_for

__all__ = ["CredentialsRefused", "LarkAPIError", "hint_for"]


class LarkAPIError(LarkBotError):
    """The Lark Open Platform answered with a non-zero code."""

    default_hint = ""  # the fix when the code has no hint of its own

    def __init__(self, code: int, msg: str, log_id: str = "", http_status: int = 200) -> None:
        self.hint = hint_for(code, msg) or self.default_hint
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
        self.scopes: tuple[str, ...] = ()  # scopes a permission error names as missing


class CredentialsRefused(LarkAPIError):
    """Lark refused the tenant token: wrong app id or secret, or the app is disabled.

    Nothing can be sent until the operator fixes it; a reply waiting on it is not lost.
    """

    default_hint = CREDENTIALS_FIX

    @classmethod
    def of(cls, err: LarkAPIError) -> CredentialsRefused:
        """The token endpoint's refusal `err`, as this error."""
        return cls(err.code, err.msg, err.log_id, err.http_status)

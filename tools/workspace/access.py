"""What the workspace tools are handed by the composition root: the asker's token and Lark's API.

Tools import nothing of `larkbot/lark/`; the Lark channel implements these two protocols (the
OAuth store behind `UserTokens`, the budgeted, paced transport behind `WorkspaceApi`) and the
root puts them in `ToolRuntime.services["workspace"]` as a `WorkspaceAccess`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class NotAuthorized(Exception):
    """The asker has not authorized the bot (or the authorization ended): send them `/auth`."""


class MissingScopes(Exception):
    """The asker's token lacks user scopes (Lark 99991679); they can grant just these."""

    def __init__(self, scopes: list[str]) -> None:
        super().__init__(f"missing user scopes: {', '.join(scopes) or 'unknown'}")
        self.scopes = scopes


class UserTokens(Protocol):
    """Each person's own Lark user access token, refreshed once across replicas."""

    async def token_for(self, open_id: str) -> str:
        """A valid `u-` token of `open_id`; NotAuthorized when there is none."""
        ...

    async def invalidate(self, open_id: str, token: str) -> None:
        """Lark refused `token` as invalid/expired (99991668/99991677): refresh before next use."""
        ...


class WorkspaceApi(Protocol):
    """Lark Open Platform calls made with a user access token (counted, paced, retried)."""

    async def call(
        self,
        method: str,
        path: str,
        *,
        user_token: str,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> dict[str, Any]:
        """The response's `data`; raises the channel's API error (with `code`) otherwise."""
        ...


@dataclass(frozen=True)
class WorkspaceAccess:
    """The two seams together, as one runtime service."""

    tokens: UserTokens
    api: WorkspaceApi


class WorkspaceApiError(Exception):
    """Lark answered a workspace call with a non-zero `code` (both sides raise and read this)."""

    def __init__(self, code: int, msg: str = "", status: int = 0) -> None:
        super().__init__(f"Lark error {code}: {msg}")
        self.code = code
        self.msg = msg
        self.status = status

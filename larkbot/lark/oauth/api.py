"""`WorkspaceApi` on the Lark side: Open Platform calls with a person's token as the bearer.

The channel's transport carries them (counted in the month's ledger, paced, 429/99991400
retried) with `Authorization: Bearer u-…` set per call; no tenant token is ever swapped in.
Lark's answers become what the tools understand: 99991679 → MissingScopes (and the person is
offered just those scopes), 99991672 → the owner is told which scope the app lacks (log, and
`larkbot doctor`); every other refusal → WorkspaceApiError (code, message, HTTP status), the one
error the tools read, so they explain it and retry an expired token once (`Session.call`, which
also marks it for refresh).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from larkbot.lark.api.errors import LarkAPIError
from larkbot.lark.api.transport import LarkTransport
from larkbot.lark.oauth.tokens import LarkUserTokens
from larkbot.logs import get_logger
from tools.workspace.access import MissingScopes, WorkspaceApiError

log = get_logger("larkbot.lark.oauth.api")

USER_SCOPE_MISSING = frozenset({99991679, 99991676})
APP_SCOPE_MISSING = 99991672

OnMissing = Callable[[str, list[str]], Awaitable[None]]  # (open_id, scopes)
OnAppScope = Callable[[list[str], str], Awaitable[None]]  # (scopes, Lark's message)


def _param(value: Any) -> str:
    """A query value as Lark reads it: true/false, a comma list (`ranges=a,b`), text."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(_param(v) for v in value)
    return str(value)


def _params(params: Mapping[str, Any] | None) -> dict[str, str] | None:
    if params is None:
        return None
    return {k: _param(v) for k, v in params.items() if v is not None}


class LarkWorkspaceApi:
    """Calls made with a user access token over the channel's transport."""

    def __init__(
        self,
        transport: LarkTransport,
        tokens: LarkUserTokens,
        on_missing: OnMissing | None = None,
        on_app_scope: OnAppScope | None = None,
    ) -> None:
        self.transport = transport
        self.tokens = tokens
        self.on_missing = on_missing
        self.on_app_scope = on_app_scope

    async def call(
        self,
        method: str,
        path: str,
        *,
        user_token: str,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> dict[str, Any]:
        """The response's `data`; WorkspaceApiError (or MissingScopes) otherwise."""
        if not user_token or user_token.startswith("t-"):
            raise ValueError("a workspace call needs the person's user access token")
        try:
            body = await self.transport.request(
                method.upper(), path, params=_params(params), json=json, bearer=user_token
            )
        except LarkAPIError as err:
            await self._answered(err, user_token)
            # the tools catch only this (they import nothing of larkbot/lark); Lark's error,
            # its log_id and hint included, stays attached as the cause for the logs
            raise WorkspaceApiError(err.code, err.msg, err.http_status) from err
        data = body.get("data")
        return data if isinstance(data, dict) else {}

    async def _answered(self, err: LarkAPIError, user_token: str) -> None:
        """Act on a refusal: offer missing scopes (raised as MissingScopes), name an app scope."""
        who = self.tokens.whose(user_token)
        scopes = list(err.scopes)
        if err.code in USER_SCOPE_MISSING:
            if who and scopes and self.on_missing is not None:
                await self.on_missing(who, scopes)
            raise MissingScopes(scopes) from err
        if err.code == APP_SCOPE_MISSING:
            log.error(
                "lark_app_scope_missing",
                scopes=scopes,
                msg=err.msg,
                hint="enable these user scopes in the Lark developer console "
                "(Permissions & Scopes), publish a version, then people /auth again",
            )
            if self.on_app_scope is not None:
                await self.on_app_scope(scopes, err.msg)

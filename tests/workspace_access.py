"""A real `WorkspaceAccess` for tests: pre-issued user tokens, and Lark's API over HTTP.

`DictTokens` hands out each person's token from a dict, and
`HttpWorkspaceApi` calls FakeLark (or any Lark) with `Authorization: Bearer <user token>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from tools.workspace.access import NotAuthorized, WorkspaceAccess, WorkspaceApiError


class DictTokens:
    """`UserTokens` over a dict open_id → token; `invalidated` records refusals."""

    def __init__(self, tokens: dict[str, str] | None = None) -> None:
        self.tokens = dict(tokens or {})
        self.invalidated: list[tuple[str, str]] = []

    async def token_for(self, open_id: str) -> str:
        """The person's token, or NotAuthorized."""
        token = self.tokens.get(open_id)
        if not token:
            raise NotAuthorized(open_id)
        return token

    async def invalidate(self, open_id: str, token: str) -> None:
        """Lark refused the token: record it."""
        self.invalidated.append((open_id, token))


class HttpWorkspaceApi:
    """`WorkspaceApi` over httpx: one request per call, Lark's error code raised."""

    def __init__(self, http: httpx.AsyncClient, domain: str) -> None:
        self.http = http
        self.domain = domain.rstrip("/")
        self.calls = 0

    async def call(
        self,
        method: str,
        path: str,
        *,
        user_token: str,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> dict[str, Any]:
        """The response's `data`, or WorkspaceApiError(code, msg, status)."""
        self.calls += 1
        response = await self.http.request(
            method,
            self.domain + path,
            params=dict(params or {}),
            json=json,
            headers={"Authorization": f"Bearer {user_token}"},
        )
        try:
            body = response.json()
        except ValueError:
            raise WorkspaceApiError(-1, response.text[:200], response.status_code) from None
        if body.get("code", -1) != 0:
            raise WorkspaceApiError(
                int(body.get("code", -1)), str(body.get("msg", "")), response.status_code
            )
        data = body.get("data")
        return data if isinstance(data, dict) else {}


def workspace_access(
    http: httpx.AsyncClient, domain: str, tokens: dict[str, str]
) -> WorkspaceAccess:
    """The runtime service the workspace tools look up (`rt.services["workspace"]`)."""
    return WorkspaceAccess(DictTokens(tokens), HttpWorkspaceApi(http, domain))

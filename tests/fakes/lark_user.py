"""FakeLark's routes called with a person's user access token (`u-…`), not the tenant's.

- GET /open-apis/authen/v1/user_info  → `{open_id, name, en_name, …}` of the token's person;
  a tenant token is refused (99991663), as Lark's USER-only endpoints do.

The workspace routes (tests/fakes/lark_workspace.py) take these tokens too, checking each
route's scope against the person's `scopes` (99991679 with `error.permission_violations`).

Tokens are registered by tests/fakes/lark_accounts.py in `fake.user_tokens` (token → person
and scopes); a rotated or revoked one is removed, so using it answers 99991668.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes.lark_cardkit import ApiError
from tests.fakes.lark_routes import ok

if TYPE_CHECKING:
    from tests.fakes.lark_server import FakeLark


def person_of(fake: FakeLark, request: web.Request) -> dict[str, Any]:
    """The person a `Bearer u-…` token stands for (ApiError otherwise)."""
    token = request.headers.get("Authorization", "").removeprefix("Bearer ")
    if not token.startswith("u-"):
        raise ApiError(99991663, "this API needs a user access token")
    person = fake.user_tokens.get(token)
    if person is None:
        raise ApiError(99991668, "user access token invalid")
    return person


def add_user_routes(app: web.Application, fake: FakeLark) -> None:
    """Register the user-token routes."""

    async def user_info(request: web.Request) -> web.Response:
        person = person_of(fake, request)
        fields = ("open_id", "name", "en_name", "union_id", "tenant_key")
        return ok({k: person[k] for k in fields if k in person})

    app.router.add_get("/open-apis/authen/v1/user_info", user_info)

"""Does the LLM endpoint take our key? Asked at start (`serve`, `chat`) and by `doctor`.

A missing key for a hosted endpoint is known without asking (`misconfig.llm_key`); a key the
endpoint refuses (401/403) — or a local server that wants one — only by asking: one
`GET {base_url}/models`, which costs no tokens. People who only chat with the bot never see
the operator's fix: `user_facing` gives them a short "not configured yet".
"""

from __future__ import annotations

import httpx

from larkbot.config import Settings
from larkbot.errors import ProviderError
from larkbot.misconfig import Problem, llm_key

PROBE_TIMEOUT = 5.0
NOT_CONFIGURED = "The bot is not configured yet: its owner has been told. Please try again later."


def auth_problem(settings: Settings, status: int) -> Problem:
    """The endpoint answered `status` (401/403): the key is missing or not this endpoint's."""
    base = settings.llm.base_url
    if not settings.llm.api_key.get_secret_value():
        return Problem(
            "llm_key",
            f"{base} wants an API key (HTTP {status}) and llm.api_key is empty: every answer fails",
            "set LLM_API_KEY in the environment or llm.api_key in the config",
        )
    return Problem(
        "llm_key",
        f"{base} refused llm.api_key (HTTP {status}): every answer fails",
        "check that llm.api_key (LLM_API_KEY) is a valid key for this endpoint "
        "(not expired or revoked, the right provider)",
    )


def _headers(settings: Settings) -> dict[str, str]:
    key = settings.llm.api_key.get_secret_value()
    return {"Authorization": f"Bearer {key}"} if key else {}


async def key_problem(
    settings: Settings, http: httpx.AsyncClient, timeout: float = PROBE_TIMEOUT
) -> Problem | None:
    """The key problem, if any: missing for a hosted endpoint, or refused by the endpoint.

    An endpoint that cannot be reached says nothing about the key (None): `doctor`'s llm line
    and the first answer's error say that.
    """
    missing = llm_key(settings)
    if missing is not None:
        return missing
    url = settings.llm.base_url.rstrip("/") + "/models"
    try:
        resp = await http.get(url, headers=_headers(settings), timeout=timeout)
    except httpx.HTTPError:
        return None
    if resp.status_code in (401, 403):
        return auth_problem(settings, resp.status_code)
    return None


UNAVAILABLE = "The language model could not answer this time. Please try again later."
SETUP_STATUSES = frozenset({401, 403, 404})  # key refused, or base URL / model wrong


def user_facing(err: ProviderError, is_owner: bool) -> str:
    """What the person chatting sees when the model failed: the operator's advice for the
    owner; for anyone else no advice at all — a set-up mistake is "not configured yet"."""
    if is_owner:
        return f"The language model failed: {err}"
    return NOT_CONFIGURED if err.status in SETUP_STATUSES else UNAVAILABLE

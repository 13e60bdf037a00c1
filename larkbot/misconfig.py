"""Set-up mistakes a user can act on: found once, warned at `serve` start, failed by `doctor`."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from larkbot.config import LLMConfig, Settings


@dataclass(frozen=True)
class Problem:
    """One mistake: a short key, what goes wrong because of it, and the fix."""

    key: str
    problem: str
    fix: str
    blocking: bool = True  # the bot cannot take events or answer them until it is fixed


SETUP_FIX = (
    "run `larkbot setup`: one scan creates the Lark app, connects it and makes you the owner "
    "(or set LARK_APP_ID and LARK_APP_SECRET from the developer console)"
)


def lark_credentials(settings: Settings) -> Problem | None:
    """No app id / secret: Lark is not connected, and `larkbot setup` is the one fix."""
    if settings.lark.configured:
        return None
    web = settings.web.enabled
    return Problem(
        "lark_credentials",
        "Lark is not connected (no lark.app_id / lark.app_secret): the bot cannot reply in Lark"
        + (" (the web chat works)" if web else ""),
        SETUP_FIX,
        blocking=not web,  # a web-only deployment is a working one
    )


def webhook_unauthenticated(settings: Settings) -> Problem | None:
    """Webhook mode with neither token nor key: every event is refused (403)."""
    lark = settings.lark
    if lark.mode != "webhook" or not lark.configured:  # no app: lark_credentials says it all
        return None
    if lark.verification_token.get_secret_value() or lark.encrypt_key.get_secret_value():
        return None
    return Problem(
        "webhook_auth",
        "webhook mode without lark.verification_token or lark.encrypt_key: every event is "
        "refused (403), since anyone could pose as the owner",
        "set LARK_VERIFICATION_TOKEN and/or LARK_ENCRYPT_KEY (console → Events & Callbacks → "
        "Encryption Strategy), or use the long connection: LARK_MODE=websocket",
    )


def webhook_unsigned(settings: Settings) -> Problem | None:
    """Webhook mode with a token but no encrypt key: events come unsigned, owners are powerless."""
    lark = settings.lark
    if lark.mode != "webhook" or not lark.configured or lark.encrypt_key.get_secret_value():
        return None
    if not lark.verification_token.get_secret_value():
        return None  # webhook_unauthenticated says more: every event is refused
    return Problem(
        "webhook_unsigned",
        "webhook mode without lark.encrypt_key: Lark sends events unsigned, so nobody's "
        "message has owner powers here (no tools with side effects, no /claim, inert buttons)",
        "set LARK_ENCRYPT_KEY (console → Events & Callbacks → Encryption Strategy), or use "
        "the long connection: LARK_MODE=websocket",
        blocking=False,  # events are answered, only without owner powers
    )


def is_local_endpoint(url: str) -> bool:
    """True for loopback/private addresses and single-label hosts (a compose service name)."""
    host = (urlsplit(url).hostname or "").lower()
    if host in ("localhost", "host.docker.internal") or (host and "." not in host):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local


LLM_KEY_FIX = (
    "set LLM_API_KEY (or llm.api_key); a local server (Ollama, vLLM) needs none: point "
    "llm.base_url (LLM_BASE_URL) at it"
)


def lacks_key(llm: LLMConfig) -> bool:
    """A hosted endpoint and no API key (a local one needs none)."""
    return not llm.api_key.get_secret_value() and not is_local_endpoint(llm.base_url)


def llm_key(settings: Settings) -> Problem | None:
    """A hosted endpoint and no API key: every turn fails with 401."""
    if not lacks_key(settings.llm):
        return None
    return Problem(
        "llm_key",
        f"llm.api_key is empty but {settings.llm.base_url} is a hosted endpoint: every answer "
        "will fail (401)",
        LLM_KEY_FIX,
    )


def no_owner(has_owner: bool) -> Problem | None:
    """Nobody owns the bot: tools with side effects run for nobody."""
    if has_owner:
        return None
    return Problem(
        "owner",
        "no owner yet: nobody may run tools with side effects (shell, files, schedules)",
        "DM the bot `/claim <code>` with the pairing code from the serve log, run "
        "`larkbot owner add OPEN_ID`, or set LARKBOT_OWNER_OPEN_IDS",
        blocking=False,
    )


def unset_variables(settings: Settings) -> list[Problem]:
    """`${VAR}` without a default whose variable is not set: the key became empty."""
    return [
        Problem(
            f"unset:{var}",
            f"{key} uses ${{{var}}}, which is not set, so {key} is empty",
            f"export {var}=…, or write ${{{var}:-default}} in {settings.source or 'the config'}",
            blocking=False,
        )
        for key, var in settings.unset_vars
    ]


def find_problems(settings: Settings, has_owner: bool | None = None) -> list[Problem]:
    """Every mistake in `settings`; the owner check only when `has_owner` is known."""
    found = [lark_credentials(settings), webhook_unauthenticated(settings), llm_key(settings)]
    found.append(webhook_unsigned(settings))
    if has_owner is not None and settings.lark.configured:
        # without Lark nobody could /claim, and web or terminal users act as owners anyway;
        # `larkbot setup` (lark_credentials' fix) makes whoever scans the owner
        found.append(no_owner(has_owner))
    return [p for p in found if p is not None] + unset_variables(settings)

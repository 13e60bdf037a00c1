"""What the registration cannot set, as the exact steps left (Lark's developer console).

The one-scan registration sets name, description, scopes, events and callbacks; it cannot
choose how events are delivered (long connection or request URL), set the encryption, or
publish a version — those stay with the person, and are listed here for the current mode.
"""

from __future__ import annotations

from larkbot.config import Settings
from larkbot.lark.api.app_info import AppInfo

CONSOLES = {
    "https://open.feishu.cn": "https://open.feishu.cn/app",
    "https://open.larksuite.com": "https://open.larksuite.com/app",
}


def console_url(domain: str, app_id: str) -> str:
    """The app's page in the developer console (the generic console for other hosts)."""
    base = CONSOLES.get(domain.rstrip("/"), "your Lark developer console")
    return f"{base}/{app_id}" if base.startswith("https://") else base


def _long_connection(console: str) -> list[str]:
    return [
        "Start the bot: `make run` (or `larkbot serve`); it connects over the long connection.",
        f"While it runs, open {console} → Events & Callbacks → Event Configuration: choose "
        "“Receive events through persistent connection” (使用长连接接收事件) and save "
        "(Lark saves it only while a client is connected).",
        "In the same page's Callback Configuration tab (回调配置), choose the persistent "
        "connection too and save (the Approve / Deny buttons).",
    ]


def _webhook(settings: Settings, console: str) -> list[str]:
    steps = [
        f"Open {console} → Events & Callbacks: set the event request URL to "
        "`https://<your host>/lark/events` and, under Callback Configuration, the callback URL "
        "to `https://<your host>/lark/card` (`larkbot serve` must be reachable to verify them)."
    ]
    lark = settings.lark
    if not (lark.encrypt_key.get_secret_value() and lark.verification_token.get_secret_value()):
        steps.append(
            f"In {console} → Events & Callbacks → Encryption Strategy, copy the Encrypt Key and "
            "Verification Token into LARK_ENCRYPT_KEY and LARK_VERIFICATION_TOKEN."
        )
    return steps


def remaining_steps(settings: Settings, app_id: str, app: AppInfo | None) -> list[str]:
    """The steps left, in order; the publish step only when no version is online yet."""
    console = console_url(settings.lark.domain, app_id)
    if settings.lark.mode == "websocket":
        steps = _long_connection(console)
    else:
        steps = _webhook(settings, console)
    if app is None or not app.published:
        steps.append(
            f"Publish a version: {console} → Version Management & Release → Create a version "
            "(scopes and events take effect only then)."
        )
    steps.append("DM the bot in Lark: it answers, and you are its owner.")
    return steps

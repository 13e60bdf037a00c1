"""Finding and starting Debian's Chromium through Playwright (never a downloaded browser).

Playwright's wheel bundles its driver; `playwright install` is never run. The browser is
`browser.executable_path` or the `chromium` on PATH. Debian's `/usr/bin/chromium` is a shell
wrapper around `/usr/lib/chromium/chromium`; the real binary is started directly (the wrapper
only adds desktop flags and costs a shell per launch).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from larkbot.config_sections import BrowserConfig

INSTALL_HINT = (
    "install it with `apt-get install chromium fonts-noto-cjk` (Debian/Ubuntu), or set "
    "browser.executable_path"
)
_DEBIAN_WRAPPER = Path("/usr/bin/chromium")
_DEBIAN_BINARY = Path("/usr/lib/chromium/chromium")

# For a closed server: no first-run UI, no update/sync/background calls, no GPU, and no UDP
# that could leave outside the proxy (QUIC, WebRTC).
LAUNCH_ARGS = [
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-quic",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-dev-shm-usage",
]


class BrowserMissing(Exception):
    """No Chromium was found (the message says how to install one)."""


def find_executable(cfg: BrowserConfig) -> str:
    """The Chromium binary to start, or BrowserMissing."""
    configured = cfg.executable_path.strip()
    path = shutil.which(configured) if configured else shutil.which("chromium")
    if not path:
        where = f"browser.executable_path {configured!r}" if configured else "chromium on PATH"
        raise BrowserMissing(f"no browser: {where} was not found; {INSTALL_HINT}")
    if Path(path).resolve() == _DEBIAN_WRAPPER and os.access(_DEBIAN_BINARY, os.X_OK):
        return str(_DEBIAN_BINARY)
    return path


def sandboxed(cfg: BrowserConfig) -> bool:
    """Chromium's own sandbox: on, except as root (where Chromium refuses it) or when off."""
    if cfg.sandbox == "auto":
        return os.geteuid() != 0
    return cfg.sandbox == "on"


def launch_options(cfg: BrowserConfig, proxy_url: str) -> dict[str, Any]:
    """Keyword arguments for `playwright.chromium.launch`."""
    return {
        "executable_path": find_executable(cfg),
        "headless": True,
        "chromium_sandbox": sandboxed(cfg),
        "args": LAUNCH_ARGS,
        "proxy": {"server": proxy_url},
        "timeout": 30_000,
    }

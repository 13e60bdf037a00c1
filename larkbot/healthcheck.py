"""`python -m larkbot.healthcheck`: the container's HEALTHCHECK, on the port the config names.

Reads the configuration by the same lookup as `larkbot serve` (so `LARKBOT_PORT` or
`server.port` in the file is followed), GETs `/healthz` and exits 0 on 200, 1 otherwise.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request

from larkbot.config import load_settings
from larkbot.errors import ConfigError

WILDCARDS = ("", "0.0.0.0", "::")


def health_url(host: str, port: int) -> str:
    """Where to ask: loopback when serve listens on every address."""
    target = "127.0.0.1" if host in WILDCARDS else host
    if ":" in target:
        target = f"[{target}]"
    return f"http://{target}:{port}/healthz"


def main() -> int:
    """0 when `/healthz` answers 200; 1 (with the reason on stderr) otherwise."""
    try:
        settings = load_settings()
    except ConfigError as err:
        print(f"healthcheck: {err}", file=sys.stderr)
        return 1
    url = health_url(settings.server.host, settings.server.port)
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return 0 if resp.status == 200 else 1
    except urllib.error.HTTPError as err:
        print(
            f"healthcheck: {url} answered {err.code}: {err.read(300).decode(errors='replace')}",
            file=sys.stderr,
        )
    except OSError as err:
        reason = getattr(err, "reason", err)  # URLError wraps the socket's error
        print(
            f"healthcheck: nothing answers at {url} ({reason}): is `larkbot serve` running, "
            f"and on port {settings.server.port} (LARKBOT_PORT / server.port)?",
            file=sys.stderr,
        )
    return 1


if __name__ == "__main__":
    sys.exit(main())

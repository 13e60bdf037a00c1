"""Structured logging: JSON for `serve`, console for `chat`; secrets are redacted before output."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

_SECRET_KEYS = re.compile(
    r"(secret|token|password|api_key|apikey|authorization|encrypt_key|cookie)", re.I
)
REDACTED = "[redacted]"


def redact_secrets(
    _: Any, __: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor: blank out values whose key looks like a credential."""
    for key in list(event_dict):
        if _SECRET_KEYS.search(key) and event_dict[key] not in (None, "", False):
            event_dict[key] = REDACTED
    return event_dict


def configure_logging(level: str = "info", fmt: str = "console") -> None:
    """Set up structlog and stdlib logging once for the process."""
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            redact_secrets,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            getattr(logging, level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO), stream=sys.stderr)
    for noisy in ("httpx", "httpcore", "apscheduler", "aiosqlite", "Lark"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def get_logger(name: str = "larkbot") -> Any:
    """A structlog logger bound to a component name."""
    return structlog.get_logger(name)

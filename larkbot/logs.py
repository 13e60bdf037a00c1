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
    route_stdlib_logging(level, renderer)


def route_stdlib_logging(level: str, renderer: Any) -> None:
    """Third-party loggers (lark-oapi, APScheduler, httpx …) rendered like ours: one format."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.processors.TimeStamper(fmt="iso"),
                redact_secrets,
            ],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    for noisy in ("httpx", "httpcore", "apscheduler", "aiosqlite", "Lark"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    adopt_library_logger("Lark")


def adopt_library_logger(name: str) -> None:
    """Drop a library's own handlers (lark-oapi prints `[Lark] …` to stdout) so its records
    reach ours; call after the library is imported (it adds them at import time)."""
    lib = logging.getLogger(name)
    lib.handlers = []
    lib.propagate = True


def get_logger(name: str = "larkbot") -> Any:
    """A structlog logger bound to a component name."""
    return structlog.get_logger(name)

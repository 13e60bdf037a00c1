"""Structured logging: JSON for `serve`, console for `chat`; secrets are redacted before output."""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

import structlog

_SECRET_KEYS = re.compile(
    r"(secret|token|password|api_key|apikey|authorization|encrypt_key|cookie)", re.I
)
REDACTED = "[redacted]"
Processor = Callable[[Any, str, MutableMapping[str, Any]], MutableMapping[str, Any]]
_level = logging.INFO  # what configure_logging set


def _redacted(value: Any, scrub: Callable[[str], str] | None, depth: int = 0) -> Any:
    """`value` with credential-named keys blanked at any depth and secret values replaced."""
    if isinstance(value, str):
        return scrub(value) if scrub else value
    if depth > 8:  # logged structures are shallow; a deeper one is cut rather than walked
        return "…"
    if isinstance(value, Mapping):
        return {
            k: REDACTED
            if isinstance(k, str) and _SECRET_KEYS.search(k) and v not in (None, "", False)
            else _redacted(v, scrub, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_redacted(v, scrub, depth + 1) for v in value]
    return value


def secret_redactor(scrub: Callable[[str], str] | None = None) -> Processor:
    """structlog processor: credential-named keys blanked (nested tool arguments too); with
    `scrub`, the bot's own secret values replaced wherever they appear in a logged string."""

    def redact(_: Any, __: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        redacted = _redacted(dict(event_dict), scrub)
        event_dict.clear()
        event_dict.update(redacted)
        return event_dict

    return redact


def _no_color() -> bool:
    """https://no-color.org: a set, non-empty NO_COLOR turns colours off."""
    return bool(os.environ.get("NO_COLOR"))


def configure_logging(
    level: str = "info", fmt: str = "console", scrub: Callable[[str], str] | None = None
) -> None:
    """Set up structlog and stdlib logging once for the process (`scrub`: secret values out)."""
    global _level
    _level = getattr(logging, level.upper(), logging.INFO)
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty() and not _no_color())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            secret_redactor(scrub),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    route_stdlib_logging(level, renderer, scrub)


def route_stdlib_logging(
    level: str, renderer: Any, scrub: Callable[[str], str] | None = None
) -> None:
    """Third-party loggers (lark-oapi, APScheduler, httpx …) rendered like ours: one format."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.processors.TimeStamper(fmt="iso"),
                secret_redactor(scrub),
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

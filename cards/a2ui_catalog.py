"""A2UI v0.9 as published: the version string the spec's JSON Schema takes, the basic catalog.

Cards use only the basic catalog, so any A2UI v0.9 renderer draws them with nothing of ours;
`strict_errors()` runs a2ui-core's STRICT validator over it when that package is installed (it
is optional at runtime).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

A2UI_VERSION = "v0.9"  # server_to_client.json: `"version": {"const": "v0.9"}`
BASIC_CATALOG_ID = "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"
CATALOG_ID = BASIC_CATALOG_ID  # the catalog larkbot's cards name
ENVELOPE_KEYS = ("createSurface", "updateComponents", "updateDataModel", "deleteSurface")


@lru_cache(maxsize=1)
def strict_catalog() -> Any | None:
    """The basic catalog as an a2ui-core Catalog, or None when a2ui-core is not installed."""
    try:
        from a2ui.core.basic_catalog import BasicCatalog
    except ImportError:
        return None
    return BasicCatalog("v0.9")


def strict_errors(messages: list[dict[str, Any]]) -> list[str]:
    """a2ui-core's STRICT_VALIDATION verdict on the messages ([] when valid or not installed)."""
    catalog = strict_catalog()
    if catalog is None:
        return []
    from a2ui.core.exceptions import A2uiError
    from a2ui.core.processing.message_processor import MessageProcessor, MessageProcessorOptions
    from a2ui.core.validation import STRICT_VALIDATION

    processor = MessageProcessor(
        catalogs=[catalog],
        options=MessageProcessorOptions(validation_config=STRICT_VALIDATION),
    )
    try:
        processor.process_messages(messages)
    except A2uiError as exc:
        return [str(exc)]
    except (ValueError, TypeError, KeyError) as exc:  # malformed input a2ui-core did not wrap
        return [f"{type(exc).__name__}: {exc}"]
    return []

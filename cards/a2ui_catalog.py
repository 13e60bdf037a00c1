"""Our A2UI v0.9 catalog: the basic catalog, a `Timeline` component, a `rankBadge` Text variant.

The JSON shapes are plain data here; `strict_catalog()` builds the same catalog for a2ui-core's
strict validator when that package is installed (it is optional at runtime).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

A2UI_VERSION = "v0.9.1"
BASIC_CATALOG_ID = "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"
CATALOG_ID = "https://larkbot.dev/a2ui/v0_9/catalogs/larkbot/catalog.json"
CATALOG_IDS = frozenset({BASIC_CATALOG_ID, CATALOG_ID})
ENVELOPE_KEYS = ("createSurface", "updateComponents", "updateDataModel", "deleteSurface")
TEXT_VARIANTS = ("h1", "h2", "h3", "h4", "h5", "caption", "body", "rankBadge")
_BASIC = "Text Image Icon Video AudioPlayer Row Column List Card Tabs Modal Divider Button"
BASIC_COMPONENTS = frozenset(
    f"{_BASIC} TextField CheckBox ChoicePicker Slider DateTimeInput".split()
)
COMPONENTS = BASIC_COMPONENTS | {"Timeline"}


@lru_cache(maxsize=1)
def strict_catalog() -> Any | None:
    """The extended catalog as an a2ui-core Catalog, or None when a2ui-core is not installed."""
    try:
        from a2ui.core.basic_catalog.v0_9 import Theme, create_basic_catalog_functions
        from a2ui.core.basic_catalog.v0_9 import components as basic
        from a2ui.core.catalog import Catalog, ModelComponentApi
        from a2ui.core.schema.v0_9.common_types import DynamicString, StrictBaseModel
        from pydantic import Field
    except ImportError:
        return None

    class RankText(basic.CatalogComponentCommon):
        """Text with the extra `rankBadge` variant (a round rank number)."""

        component: Literal["Text"] = "Text"
        text: DynamicString
        variant: Literal["h1", "h2", "h3", "h4", "h5", "caption", "body", "rankBadge"] | None = None

    class TimelineItem(StrictBaseModel):
        """One event of a Timeline."""

        time: DynamicString
        title: DynamicString
        description: DynamicString | None = None

    class Timeline(basic.CatalogComponentCommon):
        """A vertical timeline of events."""

        component: Literal["Timeline"] = "Timeline"
        items: list[TimelineItem] = Field(..., min_length=1)

    components = [
        ModelComponentApi(RankText) if api.name == "Text" else api for api in basic.BASIC_COMPONENTS
    ]
    components.append(ModelComponentApi(Timeline))
    return Catalog(
        catalog_id=CATALOG_ID,
        protocol_version="v0.9",
        components=components,
        functions=create_basic_catalog_functions(),
        theme_model=Theme,
    )


@lru_cache(maxsize=1)
def _catalogs() -> tuple[Any, ...]:
    """Ours and the plain basic catalog (hand-written A2UI may name either), built once."""
    ours = strict_catalog()
    if ours is None:
        return ()
    from a2ui.core.basic_catalog import BasicCatalog

    return (ours, BasicCatalog("v0.9"))


def strict_errors(messages: list[dict[str, Any]]) -> list[str]:
    """a2ui-core's STRICT_VALIDATION verdict on the messages ([] when valid or not installed)."""
    catalogs = _catalogs()
    if not catalogs:
        return []
    from a2ui.core.exceptions import A2uiError
    from a2ui.core.processing.message_processor import MessageProcessor, MessageProcessorOptions
    from a2ui.core.validation import STRICT_VALIDATION

    processor = MessageProcessor(
        catalogs=list(catalogs),
        options=MessageProcessorOptions(validation_config=STRICT_VALIDATION),
    )
    try:
        processor.process_messages(messages)
    except A2uiError as exc:
        return [str(exc)]
    except (ValueError, TypeError, KeyError) as exc:  # malformed input a2ui-core did not wrap
        return [f"{type(exc).__name__}: {exc}"]
    return []

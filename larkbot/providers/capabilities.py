"""Questions other parts ask about the configured model: does it see images, show its thinking."""

from __future__ import annotations

from typing import Protocol

from larkbot.config import LLMConfig, Settings
from larkbot.providers.profiles import get_profile, model_traits


class _Place(Protocol):
    @property
    def chat_type(self) -> str: ...


def sees_images(settings: Settings) -> bool:
    """Whether images go to the model as image parts (`llm.vision`; auto: the model table)."""
    llm = settings.llm
    if isinstance(llm.vision, bool):
        return llm.vision
    return model_traits(get_profile(llm.provider, llm.base_url), llm.model).vision


def shows_thinking(llm: LLMConfig, place: _Place) -> bool:
    """Whether the chain of thought is shown (as a collapsible panel) in this chat."""
    if llm.show_thinking == "always":
        return True
    return llm.show_thinking == "dm" and place.chat_type != "group"

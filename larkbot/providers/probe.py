"""`larkbot doctor`'s model probe: one tiny streamed request, and what it shows about the model.

Reasoning is detected from the reply (a reasoning field, `<think>`, or reasoning tokens in the
usage), tool support from whether a request carrying one tool schema is accepted; vision comes
from the profile table (probing it would need a second request with an image).
"""

from __future__ import annotations

import httpx

from larkbot.checks import CheckResult
from larkbot.config import Settings
from larkbot.errors import ProviderError
from larkbot.misconfig import llm_key
from larkbot.providers.base import Completion, ReasoningChunk
from larkbot.providers.capabilities import sees_images
from larkbot.providers.openai_compat import OpenAICompatProvider
from larkbot.usage import Usage

PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "noop",
        "description": "Does nothing. Do not call it.",
        "parameters": {"type": "object", "properties": {}},
    },
}


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


async def check_model(settings: Settings, http: httpx.AsyncClient) -> CheckResult:
    """Send 'Reply with OK' (with one tool schema) and report the detected traits."""
    if llm_key(settings) is not None:  # one cause, one ✗: the llm line names the missing key
        return CheckResult(
            "model", True, "not probed: no API key for this endpoint (see llm)", skipped=True
        )
    cfg = settings.llm.model_copy(
        update={"max_retries": 0, "max_tokens": 64, "timeout_seconds": 20}
    )
    provider = OpenAICompatProvider(cfg, http)
    wire = provider.wire
    thought, done = False, None
    try:
        async for event in provider.stream(
            [{"role": "user", "content": "Reply with OK."}], [PROBE_TOOL]
        ):
            thought = thought or isinstance(event, ReasoningChunk)
            if isinstance(event, Completion):
                done = event
    except ProviderError as err:
        if err.status in (401, 403):  # one cause, one ✗: the llm line names the refused key
            return CheckResult(
                "model", True, "not probed: the key was refused (see llm)", skipped=True
            )
        return CheckResult(
            "model",
            False,
            f"a tiny request with one tool schema failed ({err})",
            "check llm.model, llm.provider, and whether this model supports tools",
        )
    used = Usage.from_wire(done.usage if done else None)
    reasoning = thought or bool(done and done.reasoning) or used.reasoning > 0
    detail = (
        f"provider {wire.profile.name}; reasoning {_yes(reasoning)} (table: "
        f"{_yes(wire.traits.reasoning)}), tools accepted, vision {_yes(sees_images(settings))} "
        f"(llm.vision: {settings.llm.vision}), context {wire.context_tokens} tokens; "
        f"{used.prompt}+{used.completion} tokens used"
    )
    return CheckResult("model", True, detail)

"""Profile detection, model tables, the wire body, token estimates, usage parsing, the probe."""

from __future__ import annotations

import httpx
import pytest

from larkbot.config import LLMConfig, parse_settings
from larkbot.providers.capabilities import sees_images
from larkbot.providers.probe import check_model
from larkbot.providers.profiles import detect_provider
from larkbot.providers.tokens import IMAGE_TOKENS, message_tokens, text_tokens
from larkbot.providers.wire import Wire
from larkbot.usage import Usage
from tests.fakes.llm import FakeLLM


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://api.deepseek.com", "deepseek"),
        ("https://api.deepseek.com/v1", "deepseek"),
        ("https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen"),
        ("https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "qwen"),
        ("https://api.moonshot.cn/v1", "kimi"),
        ("https://open.bigmodel.cn/api/paas/v4", "glm"),
        ("https://ark.cn-beijing.volces.com/api/v3", "doubao"),
        ("http://localhost:11434/v1", "ollama"),
        ("http://localhost:8000/v1", "vllm"),
        ("https://my-res.openai.azure.com/openai/v1", "azure"),
        ("https://api.openai.com/v1", "openai"),
        ("https://evil-api.deepseek.com.example.org/v1", "generic"),  # suffix, not substring
        ("http://127.0.0.1:4000/v1", "generic"),
    ],
)
def test_provider_detected_from_base_url(url: str, name: str) -> None:
    assert detect_provider(url) == name


def settings(**llm: object) -> object:
    return parse_settings({"llm": llm})


@pytest.mark.parametrize(
    ("base", "model", "vision"),
    [
        ("https://api.openai.com/v1", "gpt-4o-mini", True),
        ("https://api.openai.com/v1", "o3-mini", False),
        ("https://api.deepseek.com", "deepseek-chat", False),
        ("https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen-vl-max", True),
        ("https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen-plus", False),
        ("https://api.moonshot.cn/v1", "moonshot-v1-8k-vision-preview", True),
        ("https://open.bigmodel.cn/api/paas/v4", "glm-4.5v", True),
        ("https://ark.cn-beijing.volces.com/api/v3", "doubao-seed-1-6-250615", True),
        ("http://localhost:11434/v1", "llava:13b", True),
        ("http://localhost:11434/v1", "qwen3:8b", False),
        ("http://127.0.0.1:4000/v1", "openai/gpt-4o", True),  # through a gateway
    ],
)
def test_vision_auto_uses_the_model_table(base: str, model: str, vision: bool) -> None:
    assert sees_images(settings(base_url=base, model=model)) is vision  # type: ignore[arg-type]
    forced = settings(base_url=base, model=model, vision=not vision)
    assert sees_images(forced) is (not vision)  # type: ignore[arg-type]


def test_wire_body_per_provider() -> None:
    msgs = [{"role": "user", "content": "hi"}]
    ds = Wire.for_config(
        LLMConfig(
            base_url="https://api.deepseek.com",
            model="deepseek-v4-pro",
            thinking="on",
            reasoning_effort="max",
            temperature=0.7,
        )
    )
    body = ds.payload(msgs, None, stream=False)
    assert body["thinking"] == {"type": "enabled"} and body["reasoning_effort"] == "max"
    assert "temperature" not in body and "stream_options" not in body
    off = Wire.for_config(
        LLMConfig(
            base_url="https://api.deepseek.com",
            model="deepseek-chat",
            thinking="off",
            temperature=0.7,
        )
    )
    body = off.payload(msgs, None, stream=True)
    assert body["thinking"] == {"type": "disabled"} and body["temperature"] == 0.7
    azure = Wire.for_config(
        LLMConfig(base_url="https://r.openai.azure.com/openai/v1", api_key="k", model="gpt-4o")
    )
    assert azure.headers()["api-key"] == "k" and "Authorization" not in azure.headers()
    generic = Wire.for_config(LLMConfig(base_url="http://127.0.0.1:9/v1", model="x", max_tokens=9))
    assert generic.payload(msgs, None, stream=False)["max_tokens"] == 9


def test_token_estimate_counts_cjk_images_and_tool_calls() -> None:
    assert text_tokens("a" * 100) == 30 and text_tokens("你" * 100) == 60
    image = {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "x"}},
        ],
    }
    assert message_tokens(image) >= IMAGE_TOKENS
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "shell", "arguments": "x" * 1000}}
        ],
    }
    assert message_tokens(call) > 300


def test_usage_fields_of_openai_and_deepseek() -> None:
    openai = Usage.from_wire(
        {
            "prompt_tokens": 100,
            "completion_tokens": 50,
            "completion_tokens_details": {"reasoning_tokens": 30},
            "prompt_tokens_details": {"cached_tokens": 64},
        }
    )
    assert (openai.prompt, openai.completion, openai.reasoning, openai.cached) == (100, 50, 30, 64)
    deepseek = Usage.from_wire(
        {
            "prompt_tokens": 100,
            "completion_tokens": 5,
            "prompt_cache_hit_tokens": 80,
            "prompt_cache_miss_tokens": 20,
        }
    )
    assert deepseek.cached == 80
    assert (
        Usage.from_wire(None).requests == 1 and Usage.from_wire({"prompt_tokens": "x"}).prompt == 0
    )


async def test_doctor_probe_detects_reasoning_and_tools(fake_llm: FakeLLM) -> None:
    fake_llm.reply_text("OK", reasoning="The user wants OK.")
    cfg = settings(base_url=fake_llm.base_url, model="deepseek-v4-flash", provider="deepseek")
    async with httpx.AsyncClient() as http:
        result = await check_model(cfg, http)  # type: ignore[arg-type]
        fake_llm.reply_error(400, "tools are not supported")
        refused = await check_model(cfg, http)  # type: ignore[arg-type]
    assert result.ok and "provider deepseek" in result.detail and "reasoning yes" in result.detail
    body = fake_llm.requests[0]
    assert body["tools"][0]["function"]["name"] == "noop" and body["max_tokens"] == 64
    assert not refused.ok and "tools are not supported" in refused.detail


TOOL_TURN = [
    {"role": "user", "content": "echo hi"},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "call echo",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c", "content": "hi"},
    {"role": "assistant", "content": "hi", "reasoning_content": "done"},
    {"role": "user", "content": "thanks"},
    {"role": "assistant", "content": "ok", "reasoning_content": "plain"},
    {"role": "user", "content": "bye"},
]


@pytest.mark.parametrize(
    ("base", "model", "on", "off", "echoed"),
    [
        (
            "https://api.moonshot.ai/v1",
            "kimi-k2.5",
            {"thinking": {"type": "enabled"}},
            {"thinking": {"type": "disabled"}},
            ["call echo", "done"],
        ),
        (
            "https://open.bigmodel.cn/api/paas/v4",
            "glm-4.7",
            {"thinking": {"type": "enabled"}},
            {"thinking": {"type": "disabled"}},
            ["call echo", "done"],
        ),
        (
            "https://ark.cn-beijing.volces.com/api/v3",
            "doubao-seed-1-6-250615",
            {"thinking": {"type": "enabled"}},
            {"thinking": {"type": "disabled"}},
            [],
        ),
        (
            "http://localhost:8000/v1",
            "Qwen/Qwen3-8B",
            {"chat_template_kwargs": {"enable_thinking": True}},
            {"chat_template_kwargs": {"enable_thinking": False}},
            [],
        ),
        (
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
            "qwen-plus",
            {"enable_thinking": True},
            {"enable_thinking": False},
            [],
        ),
    ],
)
def test_each_profile_sends_its_switch_and_echo_rule(
    base: str, model: str, on: dict[str, object], off: dict[str, object], echoed: list[str]
) -> None:
    """One row per profile: the documented switch for on and off, reasoning back per the rule."""
    for mode, expected in (("on", on), ("off", off)):
        wire = Wire.for_config(LLMConfig(base_url=base, model=model, thinking=mode))
        body = wire.payload(TOOL_TURN, None, stream=True)
        assert {k: body[k] for k in expected} == expected
        sent = [m["reasoning_content"] for m in body["messages"] if "reasoning_content" in m]
        assert sent == echoed  # only the tool-call turn's assistant messages, where required
    auto = Wire.for_config(LLMConfig(base_url=base, model=model)).payload(TOOL_TURN, None, True)
    assert not any(k in auto for k in (*on, *off))  # thinking: auto sends no switch at all


@pytest.mark.parametrize(
    ("base", "model", "echo"),
    [
        ("https://ark.cn-beijing.volces.com/api/v3", "deepseek-v3-2-251201", "tool_turns"),
        ("https://ark.cn-beijing.volces.com/api/v3", "kimi-k2-5-260127", "tool_turns"),
        ("https://ark.cn-beijing.volces.com/api/v3", "glm-4-7-251222", "tool_turns"),
        ("https://ark.cn-beijing.volces.com/api/v3", "doubao-seed-1-6-250615", "never"),
        ("https://api.siliconflow.cn/v1", "deepseek-ai/DeepSeek-V3.2", "tool_turns"),
        ("https://api.siliconflow.cn/v1", "zai-org/GLM-4.7", "tool_turns"),
        ("https://api.siliconflow.cn/v1", "moonshotai/Kimi-K2-Thinking", "tool_turns"),
        ("https://api.siliconflow.cn/v1", "deepseek-ai/DeepSeek-R1", "never"),
        # nothing known: what the model returned on a tool-call turn goes back
        ("https://api.siliconflow.cn/v1", "Qwen/Qwen3-8B", "returned"),
        ("http://one-api.internal:3000/v1", "my-thinker", "returned"),
        ("http://one-api.internal:3000/v1", "openai/gpt-5-mini", "never"),  # refuses the field
    ],
)
def test_hosted_models_keep_their_own_echo_rule(base: str, model: str, echo: str) -> None:
    """Ark and gateways serve DeepSeek/Kimi/GLM under their own ids; their rule goes along."""
    assert Wire.for_config(LLMConfig(base_url=base, model=model)).echo == echo


def test_kimi_k2_5_never_gets_sampling_parameters() -> None:
    """platform.kimi.ai models-overview: kimi-k2.5+ sampling "cannot be modified", in any mode."""
    msgs = [{"role": "user", "content": "hi"}]
    base = "https://api.moonshot.cn/v1"
    for thinking in ("on", "off"):
        k25 = Wire.for_config(
            LLMConfig(base_url=base, model="kimi-k2.5", thinking=thinking, temperature=0.3)
        )
        assert "temperature" not in k25.payload(msgs, None, stream=True)
    v1 = Wire.for_config(LLMConfig(base_url=base, model="moonshot-v1-8k", temperature=0.3))
    assert v1.payload(msgs, None, stream=True)["temperature"] == 0.3

"""Known OpenAI-compatible providers as data: one small table of quirks each, no code forks.

`llm.provider: auto` picks a profile from `llm.base_url`; `model_traits` then looks the model
name up in that profile's model table (first matching glob wins) for reasoning, vision, tools
and context size. Every rule carries the document it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Literal
from urllib.parse import urlsplit

Echo = Literal["tool_turns", "returned", "all", "never"]
"""How `reasoning_content` of earlier assistant messages goes back to the API:
tool_turns: on every assistant message of a user turn that called tools (and nowhere else);
returned: the same messages, but only where the model returned reasoning (nothing is made up);
all: on every assistant message; never: stripped from every message."""


@dataclass(frozen=True)
class ModelRule:
    """What one family of models can do; `pattern` is a case-insensitive glob on the model."""

    pattern: str
    reasoning: bool = False  # thinks by default (or always)
    vision: bool = False  # accepts image_url content parts
    tools: bool = True
    context: int = 0  # context window in tokens; 0: the profile's default
    echo: Echo | None = None  # overrides the profile's rule (older models)
    thinking_params: bool = True  # False: the model rejects/ignores the thinking switch
    fixed_sampling: bool = False  # the model refuses temperature/top_p/penalties in any mode


@dataclass(frozen=True)
class Profile:
    """One provider's wire quirks."""

    name: str
    hosts: tuple[str, ...] = ()  # base_url host suffixes (or host:port) that select it
    echo: Echo = "never"
    thinking_on: dict[str, Any] = field(default_factory=dict)  # body keys for llm.thinking: on
    thinking_off: dict[str, Any] = field(default_factory=dict)  # … and for off
    effort_key: str = ""  # body key of llm.reasoning_effort ("" : not supported)
    max_tokens_key: str = "max_tokens"
    drop_when_thinking: tuple[str, ...] = ()  # sampling keys a thinking request must not send
    non_stream_thinking_off: bool = False  # thinking works only when streaming
    auth_header: Literal["bearer", "api-key"] = "bearer"
    context: int = 128_000
    models: tuple[ModelRule, ...] = ()


SAMPLING_KEYS = ("temperature", "top_p", "presence_penalty", "frequency_penalty")

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "openai",
            hosts=("api.openai.com",),
            # platform.openai.com/docs/api-reference/chat/create: max_tokens "is now deprecated in
            # favor of max_completion_tokens, and is not compatible with o-series models";
            # reasoning models reject temperature (openai/o-series "Unsupported parameter").
            effort_key="reasoning_effort",
            max_tokens_key="max_completion_tokens",
            drop_when_thinking=("temperature", "top_p"),
            models=(
                ModelRule("o1-mini*", reasoning=True, context=128_000),
                ModelRule("o3-mini*", reasoning=True, context=200_000),
                ModelRule("o[134]*", reasoning=True, vision=True, context=200_000),
                ModelRule("gpt-5*", reasoning=True, vision=True, context=400_000),
                ModelRule("gpt-4.1*", vision=True, context=1_000_000),
                ModelRule("gpt-4o*", vision=True, context=128_000),
                ModelRule("gpt-3.5*", context=16_000),
            ),
        ),
        Profile(
            "azure",
            hosts=(".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"),
            # learn.microsoft.com/azure/ai-foundry/openai/reference: key in the `api-key` header;
            # deployments serve OpenAI models, so the OpenAI reasoning rules apply.
            auth_header="api-key",
            effort_key="reasoning_effort",
            max_tokens_key="max_completion_tokens",
            drop_when_thinking=("temperature", "top_p"),
            models=(
                ModelRule("o[134]*", reasoning=True, vision=True, context=200_000),
                ModelRule("gpt-5*", reasoning=True, vision=True, context=400_000),
                ModelRule("gpt-4o*", vision=True),
                ModelRule("gpt-4.1*", vision=True, context=1_000_000),
            ),
        ),
        Profile(
            "deepseek",
            hosts=("api.deepseek.com",),
            # api-docs.deepseek.com/guides/thinking_mode: "thinking": {"type": "enabled|disabled"}
            # (default enabled), "reasoning_effort": "high|max"; between two user messages, if the
            # model performed a tool call, reasoning_content "must be passed back to the API in
            # all subsequent turns" or the API answers 400; without tool calls it is ignored.
            # temperature/top_p/penalties "will not trigger an error but will also have no effect".
            echo="tool_turns",
            thinking_on={"thinking": {"type": "enabled"}},
            thinking_off={"thinking": {"type": "disabled"}},
            effort_key="reasoning_effort",
            drop_when_thinking=SAMPLING_KEYS,
            context=128_000,
            models=(
                ModelRule("deepseek-chat*"),  # the alias of V4's non-thinking mode
                # The older deepseek-reasoner (R1) rule, api-docs.deepseek.com/guides/
                # reasoning_model: "if the reasoning_content field is included in the sequence of
                # input messages, the API will return a 400 error"; no Function Call; 64K context.
                ModelRule(
                    "deepseek-r1*",
                    reasoning=True,
                    echo="never",
                    thinking_params=False,
                    context=64_000,
                ),
                ModelRule("deepseek-reasoner*", reasoning=True),
                ModelRule("deepseek-v*", reasoning=True, context=1_000_000),
            ),
        ),
        Profile(
            "qwen",
            hosts=(
                "dashscope.aliyuncs.com",
                "dashscope-intl.aliyuncs.com",
                "dashscope-us.aliyuncs.com",
            ),
            # help.aliyun.com/en/model-studio/deep-thinking: hybrid models take "enable_thinking"
            # (extra_body), examples stream; thinking of open-source Qwen3 works only streamed, so
            # non-streamed calls switch it off. The examples pass only `content` back.
            # alibabacloud.com notice 724: max_tokens is replaced by max_completion_tokens.
            thinking_on={"enable_thinking": True},
            thinking_off={"enable_thinking": False},
            max_tokens_key="max_completion_tokens",
            non_stream_thinking_off=True,
            context=128_000,
            models=(
                ModelRule("qvq*", reasoning=True, vision=True, thinking_params=False),
                ModelRule("qwq*", reasoning=True, thinking_params=False),
                ModelRule("qwen*-vl*", vision=True),
                ModelRule("qwen*omni*", vision=True),
                ModelRule("qwen3.[5-9]*", reasoning=True, vision=True, context=1_000_000),
                ModelRule("qwen3-max*", reasoning=True, context=256_000),
                ModelRule("qwen3-*-instruct*", context=256_000, thinking_params=False),
                ModelRule("qwen3*", reasoning=True),
                ModelRule("qwen-plus*", reasoning=True, context=1_000_000),
                ModelRule("qwen-flash*", reasoning=True, context=1_000_000),
                ModelRule("qwen-turbo*", reasoning=True, context=1_000_000),
                ModelRule("qwen-max*", context=32_000),
            ),
        ),
        Profile(
            "kimi",
            hosts=("api.moonshot.cn", "api.moonshot.ai"),
            # platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model: reasoning_content of
            # tool-calling assistant messages stays in later requests (else a 400 "thinking is
            # enabled but reasoning_content is missing in assistant tool call message");
            # platform.kimi.ai/docs/api/models-overview: kimi-k2.5+ take "thinking": {"type"},
            # and their temperature, top_p and penalties "cannot be modified".
            echo="tool_turns",
            thinking_on={"thinking": {"type": "enabled"}},
            thinking_off={"thinking": {"type": "disabled"}},
            context=256_000,
            models=(
                ModelRule("moonshot-v1-*vision*", vision=True, thinking_params=False),
                ModelRule("moonshot-v1-8k*", context=8_000, thinking_params=False),
                ModelRule("moonshot-v1-32k*", context=32_000, thinking_params=False),
                ModelRule("moonshot-v1*", thinking_params=False),
                ModelRule("kimi-k2-thinking*", reasoning=True, thinking_params=False),
                ModelRule("kimi-k2.[5-9]*", reasoning=True, vision=True, fixed_sampling=True),
                ModelRule("kimi-k2*", thinking_params=False),
                ModelRule("kimi-latest*", vision=True, thinking_params=False),
            ),
        ),
        Profile(
            "glm",
            hosts=("open.bigmodel.cn", "api.z.ai"),
            # docs.z.ai/guides/capabilities/thinking-mode: "thinking": {"type": "enabled|disabled"},
            # on by default since GLM-4.7; with interleaved thinking + tools "thinking blocks should
            # be explicitly preserved and returned together with the tool results".
            echo="tool_turns",
            thinking_on={"thinking": {"type": "enabled"}},
            thinking_off={"thinking": {"type": "disabled"}},
            context=128_000,
            models=(
                ModelRule("glm-*v*", reasoning=True, vision=True),  # glm-4.5v, glm-4.6v, glm-4v
                ModelRule("glm-4.[5-9]*", reasoning=True, context=200_000),
                ModelRule("glm-[5-9]*", reasoning=True, context=200_000),
                ModelRule("glm-4*", thinking_params=False),
            ),
        ),
        Profile(
            "doubao",
            hosts=("ark.cn-beijing.volces.com", "volces.com", "ark.ap-southeast.bytepluses.com"),
            # volcengine.com/docs/82379 (Ark deep thinking): "thinking": {"type":
            # "enabled|disabled|auto"}; the chain of thought comes back as reasoning_content.
            thinking_on={"thinking": {"type": "enabled"}},
            thinking_off={"thinking": {"type": "disabled"}},
            context=256_000,
            models=(
                ModelRule("doubao-seed-1[.-][68]*", reasoning=True, vision=True),
                ModelRule("doubao-seed-2*", reasoning=True, vision=True),
                ModelRule("doubao-seed-code*", reasoning=True, vision=True),
                ModelRule("doubao-1[.-]5-thinking-vision*", reasoning=True, vision=True),
                ModelRule("doubao-1[.-]5-thinking*", reasoning=True, thinking_params=False),
                ModelRule("*vision*", vision=True, thinking_params=False),
                ModelRule("doubao-*", thinking_params=False, context=128_000),
            ),
        ),
        Profile(
            "ollama",
            hosts=("localhost:11434", "127.0.0.1:11434", "ollama.com"),
            # docs.ollama.com/api/openai-compatibility: supports tools, vision, reasoning_effort;
            # the thinking comes back as `reasoning`. Its default context is 4096 tokens (num_ctx).
            effort_key="reasoning_effort",
            context=4_096,
            models=(
                ModelRule("*llava*", vision=True, tools=False),
                ModelRule("*vision*", vision=True),
                ModelRule("*vl*", vision=True),
                ModelRule("gemma3*", vision=True),
                ModelRule("minicpm-v*", vision=True, tools=False),
                ModelRule("qwen3*", reasoning=True),
                ModelRule("deepseek-r1*", reasoning=True, tools=False),
                ModelRule("gpt-oss*", reasoning=True),
            ),
        ),
        Profile(
            "vllm",
            hosts=("localhost:8000", "127.0.0.1:8000"),
            # docs.vllm.ai/en/latest/features/reasoning_outputs: the field is `reasoning` (was
            # reasoning_content); Qwen3 thinking is switched with chat_template_kwargs.
            thinking_on={"chat_template_kwargs": {"enable_thinking": True}},
            thinking_off={"chat_template_kwargs": {"enable_thinking": False}},
            context=32_000,
            models=(
                ModelRule("*vl*", vision=True),
                ModelRule("*qwen3*", reasoning=True),
                ModelRule("*deepseek-r1*", reasoning=True, thinking_params=False),
            ),
        ),
    )
}

# An unknown OpenAI-compatible server (a gateway such as one-api, new-api, LiteLLM, or a model under
# a custom alias): nothing unusual is sent, but reasoning the model returned on a tool-call turn
# goes back, as every thinking API that wants it needs and the others ignore. A server that still
# answers 400 naming the field teaches the full rule (providers/echo_rules.py).
GENERIC = Profile("generic", echo="returned")


def detect_provider(base_url: str) -> str:
    """The profile name `llm.provider: auto` picks for `base_url` ("generic" when unknown)."""
    parts = urlsplit(base_url if "//" in base_url else f"http://{base_url}")
    host = (parts.hostname or "").lower()
    netloc = f"{host}:{parts.port}" if parts.port else host
    for profile in PROFILES.values():
        for suffix in profile.hosts:
            target = netloc if ":" in suffix else host
            if target == suffix or target.endswith(suffix if suffix[0] == "." else "." + suffix):
                return profile.name
    return "generic"


def get_profile(provider: str, base_url: str) -> Profile:
    """The profile for `llm.provider` (resolving "auto" from the base URL)."""
    name = detect_provider(base_url) if provider == "auto" else provider
    return PROFILES.get(name, GENERIC)


_GUESSES = (  # for servers we know nothing about (a gateway, a generic proxy)
    ModelRule("*deepseek-r1*", reasoning=True, echo="never"),
    # Served by Ark, SiliconFlow or a gateway, these keep their vendor's rule (the deepseek, kimi
    # and glm profiles above): reasoning_content back on tool-call turns, or a 400. Ark lists them
    # under their own ids (volcengine.com/docs/82379/1330310: deepseek-v3-2-…, kimi-k2-5-…,
    # glm-4-7-…); docs.siliconflow.com/cn/userguide/guides/interleaved-thinking says the same of
    # DeepSeek V3.2 and GLM-4.7 there.
    ModelRule("*deepseek-v3[.-][2-9]*", echo="tool_turns"),
    ModelRule("*deepseek-v[4-9]*", reasoning=True, echo="tool_turns"),
    ModelRule("*kimi-k2-thinking*", reasoning=True, echo="tool_turns"),
    ModelRule("*kimi-k2[.-][5-9]*", reasoning=True, vision=True, echo="tool_turns"),
    ModelRule("*glm-4[.-][5-9]*v*", reasoning=True, vision=True, echo="tool_turns"),
    ModelRule("*glm-4[.-][5-9]*", reasoning=True, echo="tool_turns"),
    ModelRule("*glm-[5-9]*", reasoning=True, echo="tool_turns"),
    ModelRule("*vision*", vision=True),
    ModelRule("*[-_.]vl", vision=True),
    ModelRule("*[-_.]vl[-_.:]*", vision=True),
    ModelRule("*qwen*vl*", vision=True),
    ModelRule("*internvl*", vision=True),
    # OpenAI's models refuse unknown message fields: no reasoning back, wherever they are served
    ModelRule("*gpt-4o*", vision=True, echo="never"),
    ModelRule("*gpt-4.1*", vision=True, echo="never"),
    ModelRule("*gpt-4-turbo*", vision=True, echo="never"),
    ModelRule("*gpt-5*", reasoning=True, vision=True, echo="never"),
    ModelRule("o1-mini*", reasoning=True, echo="never"),
    ModelRule("o3-mini*", reasoning=True, echo="never"),
    ModelRule("o[134]*", reasoning=True, vision=True, echo="never"),
    ModelRule("*claude*", vision=True),
    ModelRule("*gemini*", vision=True),
    ModelRule("*glm-4*v*", vision=True),
    ModelRule("*llava*", vision=True),
    ModelRule("*pixtral*", vision=True),
    ModelRule("*minicpm-v*", vision=True),
    ModelRule("*llama*3.2*11b*", vision=True),
    ModelRule("*llama*3.2*90b*", vision=True),
    ModelRule("*llama-4*", vision=True),
    ModelRule("*llama4*", vision=True),
    ModelRule("*gemma3*", vision=True),
    ModelRule("*gemma-3*", vision=True),
    ModelRule("*mistral-small-3*", vision=True),
    ModelRule("*mistral-medium-3*", vision=True),
    ModelRule("*qwen3*", reasoning=True),
)


def model_traits(profile: Profile, model: str) -> ModelRule:
    """The first rule of the profile's table (then the generic guesses) matching `model`."""
    name = model.lower().rsplit("/", 1)[-1]  # "openai/gpt-4o" through a gateway
    for rule in (*profile.models, *_GUESSES):
        if fnmatchcase(name, rule.pattern):
            return rule
    return ModelRule("*")

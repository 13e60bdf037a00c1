"""Request rules of real providers, for `FakeLLM.validate`: the fake refuses what they refuse.

Each function returns the provider's 400 message for a body it would reject, else None.
"""

from __future__ import annotations

from typing import Any


def _spans(messages: list[dict[str, Any]]) -> list[list[tuple[int, dict[str, Any]]]]:
    spans: list[list[tuple[int, dict[str, Any]]]] = [[]]
    for i, m in enumerate(messages):
        if m.get("role") == "user":
            spans.append([])
        elif m.get("role") == "assistant":
            spans[-1].append((i, m))
    return spans


def deepseek_thinking(body: dict[str, Any]) -> str | None:
    """DeepSeek thinking mode (default on): tool-call turns must carry reasoning_content back.

    api-docs.deepseek.com/guides/thinking_mode#tool-calls; the message is the API's own.
    """
    if (body.get("thinking") or {}).get("type") == "disabled":
        return None
    for span in _spans(body.get("messages") or []):
        if not any(m.get("tool_calls") for _, m in span):
            continue
        for index, m in span:
            if "reasoning_content" not in m:
                return (
                    "Missing `reasoning_content` field in the assistant message at message "
                    f"index {index}. For more information, please refer to "
                    "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
                )
    return None


def deepseek_reasoner_r1(body: dict[str, Any]) -> str | None:
    """The older deepseek-reasoner rule: any reasoning_content in the input is a 400.

    api-docs.deepseek.com/guides/reasoning_model (R1).
    """
    for m in body.get("messages") or []:
        if "reasoning_content" in m:
            return "The reasoning_content field is not supported in input messages."
    if "thinking" in body:
        return "thinking is not supported by this model"
    return None


def dashscope(body: dict[str, Any]) -> str | None:
    """DashScope: open-source Qwen3 thinks only when streamed; max_tokens is being replaced."""
    if body.get("enable_thinking") and not body.get("stream"):
        return "parameter.enable_thinking must be set to false for non-streaming calls"
    if "max_tokens" in body:
        return "max_tokens is deprecated, use max_completion_tokens"
    return None


def openai_reasoning(body: dict[str, Any]) -> str | None:
    """OpenAI o-series: max_tokens and temperature are refused."""
    if "max_tokens" in body:
        return (
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead."
        )
    if "temperature" in body:
        return "Unsupported parameter: 'temperature' is not supported with this model."
    return None


def kimi_thinking(body: dict[str, Any]) -> str | None:
    """Kimi K2.5+ (thinks by default): tool-call messages keep reasoning_content; fixed sampling.

    platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model; platform.kimi.ai/docs/api/
    models-overview ("cannot be modified"). The messages are the API's own.
    """
    for key in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
        if key in body:
            return f"invalid {key}: this model does not allow modifying it"
    if (body.get("thinking") or {}).get("type") == "disabled":
        return None
    for index, m in enumerate(body.get("messages") or []):
        if m.get("role") == "assistant" and m.get("tool_calls") and "reasoning_content" not in m:
            return (
                "thinking is enabled but reasoning_content is missing in assistant tool call "
                f"message at index {index}"
            )
    return None

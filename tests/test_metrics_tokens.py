"""/metrics counts every kind of token a provider reports, not only prompt and completion."""

from __future__ import annotations

from larkbot.metrics import REGISTRY, count_llm_request


def _tokens(model: str, kind: str) -> float:
    return (
        REGISTRY.get_sample_value("larkbot_llm_tokens_total", {"model": model, "kind": kind}) or 0
    )


def test_reasoning_and_cached_tokens_are_counted() -> None:
    model = "deepseek-reasoner-metrics-test"
    deepseek_usage = {
        "prompt_tokens": 120,
        "completion_tokens": 80,
        "prompt_cache_hit_tokens": 100,  # DeepSeek's spelling of cached prompt tokens
        "completion_tokens_details": {"reasoning_tokens": 50},
    }
    count_llm_request(model, ok=True, usage=deepseek_usage)
    count_llm_request(model, ok=True, usage={"prompt_tokens": 10, "completion_tokens": 5})
    assert [_tokens(model, k) for k in ("prompt", "completion", "reasoning", "cached")] == [
        130,
        85,
        50,
        100,
    ]


def test_a_request_without_usage_counts_no_tokens() -> None:
    model = "no-usage-metrics-test"
    count_llm_request(model, ok=False, error="boom")
    assert (
        REGISTRY.get_sample_value(
            "larkbot_llm_requests_total", {"model": model, "outcome": "error"}
        )
        == 1
    )
    assert _tokens(model, "prompt") == 0

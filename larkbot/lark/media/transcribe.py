"""Voice messages to text: the OpenAI-compatible `/audio/transcriptions` endpoint of `llm:`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from larkbot.config import LLMConfig

MAX_TRANSCRIPT = 8000


async def transcribe(http: httpx.AsyncClient, llm: LLMConfig, path: Path) -> str:
    """The transcript of an audio file with `llm.transcription_model`; raises on failure."""
    data = await asyncio.to_thread(path.read_bytes)
    key = llm.api_key.get_secret_value()
    resp = await http.post(
        llm.base_url.rstrip("/") + "/audio/transcriptions",
        data={"model": llm.transcription_model},
        files={"file": (path.name, data, "audio/ogg")},
        headers={"Authorization": f"Bearer {key}"} if key else {},
        timeout=llm.timeout_seconds,
    )
    resp.raise_for_status()
    body = resp.json()
    text = body.get("text") if isinstance(body, dict) else None
    if not isinstance(text, str):
        raise ValueError("transcription response without text")
    return text.strip()[:MAX_TRANSCRIPT]

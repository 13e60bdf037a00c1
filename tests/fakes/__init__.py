"""Fake Lark Open Platform and fake LLM servers for tests (real aiohttp on 127.0.0.1)."""

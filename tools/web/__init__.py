"""Helpers of the web tools: SSRF policy, pinned HTTP transport, fetching, extraction, search."""

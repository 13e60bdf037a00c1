"""Lark workspace tools' plumbing: links, API calls and rendering, acting as the person who asks."""

"""The environment's part of the configuration: `${VAR}` expansion and the variables that work
with no config file at all (CONTRACT.md). A value written in the file wins over the variable."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# variable -> the config key it fills when the file does not set that key
ENV_KEYS: dict[str, tuple[str, ...]] = {
    "LARK_APP_ID": ("lark", "app_id"),
    "LARK_APP_SECRET": ("lark", "app_secret"),
    "LARK_ENCRYPT_KEY": ("lark", "encrypt_key"),
    "LARK_VERIFICATION_TOKEN": ("lark", "verification_token"),
    "LARK_DOMAIN": ("lark", "domain"),
    "LARK_MODE": ("lark", "mode"),
    "LLM_BASE_URL": ("llm", "base_url"),
    "LLM_API_KEY": ("llm", "api_key"),
    "LLM_MODEL": ("llm", "model"),
    "LARKBOT_OWNER_OPEN_IDS": ("owner", "open_ids"),  # comma-separated
    "LARKBOT_WEB_TOKEN": ("web", "token"),
    "LARKBOT_STORAGE_URL": ("storage", "url"),
    "REDIS_URL": ("storage", "redis_url"),
    "LARKBOT_HOST": ("server", "host"),
    "LARKBOT_PORT": ("server", "port"),
    "LARK_ACCOUNTS_DOMAIN": ("lark", "accounts_domain"),
}


@dataclass
class Expansion:
    """What `${VAR}` expansion met: variables without a value or default, by config key."""

    unset: list[tuple[str, str]] = field(default_factory=list)  # (key, variable)


def overlay_env(raw: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """`raw` with every ENV_KEYS variable that is set filling its key, unless `raw` has it."""
    merged: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    for name, (section, key) in ENV_KEYS.items():
        value = env.get(name, "")
        if not value:
            continue
        part = merged.setdefault(section, {})
        if isinstance(part, dict) and key not in part:
            part[key] = value
    return merged


def expand_env(
    value: Any, env: dict[str, str], path: str = "", seen: Expansion | None = None
) -> Any:
    """Expand `${VAR}` and `${VAR:-default}` (defaults may nest) in every string of a YAML tree."""
    if isinstance(value, dict):
        return {
            k: expand_env(v, env, f"{path}.{k}" if path else str(k), seen) for k, v in value.items()
        }
    if isinstance(value, list):
        return [expand_env(v, env, f"{path}[{i}]", seen) for i, v in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value
    text, _ = _expand(value, 0, env, path, seen, closing=False)
    return text


def _expand(
    s: str, i: int, env: dict[str, str], path: str, seen: Expansion | None, closing: bool
) -> tuple[str, int]:
    """Expand from `s[i]` up to the end (or the `}` closing a default); (text, next index)."""
    out: list[str] = []
    while i < len(s):
        if closing and s[i] == "}":
            return "".join(out), i + 1
        if s.startswith("${", i):
            j = i + 2
            while j < len(s) and (s[j].isalnum() or s[j] == "_"):
                j += 1
            name = s[i + 2 : j]
            if name and not name[0].isdigit() and s.startswith(":-", j):
                default, i = _expand(s, j + 2, env, path, seen, closing=True)
                out.append(env[name] if env.get(name) else default)
                continue
            if name and not name[0].isdigit() and s.startswith("}", j):
                if env.get(name):
                    out.append(env[name])
                elif seen is not None:
                    seen.unset.append((path, name))
                i = j + 1
                continue
        out.append(s[i])
        i += 1
    return "".join(out), i

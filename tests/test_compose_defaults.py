"""docker-compose.yml publishes the owner-powered web page and `/metrics` on loopback only,
unless the operator says otherwise (LARKBOT_BIND). No Docker needed: the file's `${VAR:-default}`
values are expanded as compose does for these simple forms."""

from __future__ import annotations

from pathlib import Path

import yaml

from larkbot.config_env import expand_env

COMPOSE = Path(__file__).resolve().parents[1] / "docker-compose.yml"


def _ports(env: dict[str, str]) -> dict[str, list[str]]:
    services = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]
    return {
        name: [expand_env(p, env) for p in svc.get("ports", [])] for name, svc in services.items()
    }


def test_every_published_port_is_on_loopback_by_default() -> None:
    ports = _ports({})
    assert ports["larkbot"] == ["127.0.0.1:8080:8080"]
    published = [p for listed in ports.values() for p in listed]
    assert published and all(p.startswith("127.0.0.1:") for p in published), published


def test_the_operator_can_publish_larkbot_elsewhere() -> None:
    ports = _ports({"LARKBOT_BIND": "0.0.0.0", "LARKBOT_PORTS": "8080-8081"})
    assert ports["larkbot"] == ["0.0.0.0:8080-8081:8080"]

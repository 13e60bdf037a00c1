"""Shared fixtures: an isolated LARKBOT_HOME and a guard that fails any non-loopback connection."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _check_address(address: Any) -> None:
    if isinstance(address, tuple) and address:
        host = address[0]
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            raise RuntimeError(f"test tried to connect to a hostname: {host!r}") from None
        if not ip.is_loopback:
            raise RuntimeError(f"test tried to reach the network: {host}")


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _check_address(address)
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _check_address(address)
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any accidental real network call fails the test: only loopback is reachable."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """CLI entry points configure structlog onto the current (captured) stderr; undo it after."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated LARKBOT_HOME with no config file and no LARKBOT_CONFIG."""
    home_dir = tmp_path / "home"
    home_dir.mkdir()
    monkeypatch.setenv("LARKBOT_HOME", str(home_dir))
    monkeypatch.delenv("LARKBOT_CONFIG", raising=False)
    return home_dir


@pytest.fixture
async def fake_lark() -> Any:
    """A running FakeLark (tests/fakes/lark_server.py): point `lark.domain` at `.domain`."""
    from tests.fakes.lark_server import FakeLark

    async with FakeLark() as fake:
        yield fake


@pytest.fixture
async def accounts(fake_lark: Any) -> Any:
    """A running FakeAccounts (tests/fakes/lark_accounts.py) for `fake_lark`, knowing
    tests/oauth_harness.py's NAMES: point `lark.accounts_domain` at `.url`."""
    from tests.fakes.lark_accounts import FakeAccounts
    from tests.oauth_harness import NAMES

    async with FakeAccounts(fake_lark, names=dict(NAMES)) as fake:
        yield fake


@pytest.fixture
async def fake_llm() -> Any:
    """A running FakeLLM (tests/fakes/llm.py): point `llm.base_url` at `.base_url`."""
    from tests.fakes.llm import FakeLLM

    async with FakeLLM() as fake:
        yield fake


@pytest.fixture
async def pg_url() -> Any:
    """A fresh, empty PostgreSQL database's URL (tests/pg.py); fails when none is configured."""
    from tests.pg import fresh_database

    async with fresh_database() as url:
        yield url


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the LiteLLM proxy early when its tests are selected (its start-up takes a while)."""
    if any(
        item.module.__name__.endswith("test_models_gateway")
        for item in session.items
        if getattr(item, "module", None) is not None
    ):
        from tests.litellm_gateway import start_gateway

        start_gateway()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the LiteLLM proxy if this session started it."""
    from tests.litellm_gateway import stop_gateway

    stop_gateway()


def pytest_collection_modifyitems(items: list[Any]) -> None:
    """Tests using `pg_url` carry the `postgres` marker: `-m "not postgres"` deselects them."""
    for item in items:
        if "pg_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)

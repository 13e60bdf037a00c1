"""The npm packages tests use (tests/package.json; `make test` installs them with `npm ci`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

NODE_MODULES = Path(__file__).parent / "node_modules"


def npm_package(name: str) -> Path:
    """An installed package's folder; the test fails saying how to install it when it is missing."""
    path = NODE_MODULES / name
    if not (path / "package.json").is_file():
        pytest.fail(f"{name} is not installed: run `npm ci --prefix tests` (make test does)")
    return path


def node() -> str:
    """The node binary (make test's system-tools step installs it)."""
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not installed: apt-get install nodejs npm (make test does)")
    return found

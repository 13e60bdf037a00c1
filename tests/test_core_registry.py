"""ToolRegistry scopes; loading (tools/plugins.py): built-ins, $LARKBOT_HOME/tools, entry points."""

from __future__ import annotations

import importlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

import tools.builtin
from larkbot.config import LiveSettings, parse_settings
from larkbot.storage.db import Database
from tests.core_helpers import EchoTool, SleepTool, WebThing
from tools.plugins import load_package_tools, load_plugins
from tools.registry import ToolRegistry
from tools.runtime import ToolRuntime

GOOD_PLUGIN = """
from tools.base import BaseTool

class MyTool(BaseTool):
    name = "my_tool"
    description = "Does something useful"
    parameters = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}

    async def run(self, **kwargs):
        return "my " + kwargs["x"]

class NeedsArgs(BaseTool):
    name = "needs_args"
    description = "cannot be built without arguments"

    def __init__(self, thing):
        self.thing = thing

    async def run(self, **kwargs):
        return ""
"""

PROVIDE_PLUGIN = """
from tools.base import BaseTool

class Hello(BaseTool):
    name = "hello"
    description = "Say hello"
    def __init__(self, who):
        self.who = who
    async def run(self, **kwargs):
        return "hello " + self.who

def provide(rt):
    return [Hello(rt.interface)]
"""


@pytest.fixture
async def rt(home: Path, tmp_path: Path) -> AsyncIterator[ToolRuntime]:
    settings = parse_settings({"tools": {"disabled": ["disabled_tool"]}})
    db = Database(f"sqlite:///{tmp_path}/r.db")
    async with httpx.AsyncClient() as http:
        yield ToolRuntime("cli", LiveSettings(settings), http, db)
    await db.close()


def test_scopes_and_openai_export() -> None:
    reg = ToolRegistry()
    for t in (SleepTool(), EchoTool(), WebThing()):
        reg.register(t)
    assert [t.name for t in reg.for_interface("cli")] == ["echo", "sleep"]
    assert [t.name for t in reg.for_interface("web")] == ["echo", "sleep", "web_only"]
    assert [t.name for t in reg.for_interface("fast")] == ["echo"]
    schema = reg.openai_tools([reg.get("echo")])  # type: ignore[list-item]
    assert schema[0]["type"] == "function" and schema[0]["function"]["name"] == "echo"
    reg.unregister("echo")
    assert reg.get("echo") is None and len(reg) == 2


async def test_plugins_from_home_and_broken_ones_skipped(home: Path, rt: ToolRuntime) -> None:
    plugins = home / "tools"
    plugins.mkdir()
    (plugins / "good.py").write_text(GOOD_PLUGIN)
    (plugins / "greet.py").write_text(PROVIDE_PLUGIN)
    (plugins / "broken.py").write_text("import nonexistent_module_xyz\n")
    (plugins / "syntax.py").write_text("def (:\n")
    (plugins / "disabled.py").write_text(GOOD_PLUGIN.replace("my_tool", "disabled_tool"))
    reg = ToolRegistry()
    count = load_plugins(reg, rt)
    assert sorted(t.name for t in reg.all()) == ["hello", "my_tool"]
    assert count == 2
    result = await reg.get("my_tool").run(x="a")  # type: ignore[union-attr]
    assert result == "my a"
    assert await reg.get("hello").run() == "hello cli"  # type: ignore[union-attr]


async def test_entry_point_plugins(
    tmp_path: Path, rt: ToolRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    dist = site / "larkbot_demo_plugin-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: larkbot-demo-plugin\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[larkbot.tools]\ndemo = larkbot_demo_plugin\nbad = larkbot_demo_missing:provide\n"
    )
    (site / "larkbot_demo_plugin.py").write_text(GOOD_PLUGIN.replace("my_tool", "ep_tool"))
    monkeypatch.syspath_prepend(str(site))
    reg = ToolRegistry()
    load_plugins(reg, rt)
    assert reg.get("ep_tool") is not None
    sys.modules.pop("larkbot_demo_plugin", None)


async def test_package_loader_skips_broken_modules(
    tmp_path: Path, rt: ToolRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "zz_core_tools"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "zz_core_ok.py").write_text(
        "from tests.core_helpers import SleepTool, EchoTool\n"
        "def provide(rt):\n    return [SleepTool(), EchoTool()]\n"
    )
    (package / "zz_core_broken.py").write_text("raise RuntimeError('broken at import')\n")
    (package / "_zz_private.py").write_text("raise RuntimeError('never imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = ToolRegistry()
    try:
        assert load_package_tools(reg, rt, importlib.import_module("zz_core_tools")) == 2
        assert reg.get("sleep") is not None and reg.get("echo") is not None
        assert "zz_core_tools._zz_private" not in sys.modules
    finally:
        for name in ("zz_core_tools", "zz_core_tools.zz_core_ok", "zz_core_tools.zz_core_broken"):
            sys.modules.pop(name, None)


async def test_the_builtins_load_through_the_same_seam(rt: ToolRuntime) -> None:
    reg = ToolRegistry()
    assert load_package_tools(reg, rt, tools.builtin) > 10
    assert reg.get("send_file") is not None and reg.get("shell") is not None

"""The shell's sandbox, proven from inside a call through the real tool, and its fallbacks.

Inside: `$LARKBOT_HOME`'s secrets, config file and database (with its -wal and -journal) are not
there, no other process is visible in /proc (the bot's environment included), and the working
directory is written as before. Without bwrap (not installed, or no user namespaces, as in a
container) `auto` runs commands unsandboxed and doctor says so with a warning; `bwrap` refuses.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from larkbot.checks import CheckResult
from larkbot.doctor import CHECKS
from tests.builtin_rt import tool_runtime
from tools.builtin._sandbox import check_sandbox, probe
from tools.builtin.shell import ShellTool
from tools.runtime import ToolRuntime

SECRET = "app-secret-in-file-4711"
CONFIG = "llm: {api_key: sk-config-file-4711}\n"
DB_PAGE = "db-page-bytes-4711"
ENV_SECRET = "sk-bot-environment-4711"


@pytest.fixture
def bwrap() -> None:
    """The sandbox proofs need bwrap able to make namespaces (`make test` installs bubblewrap);
    without it they fail naming why, rather than pass by skipping (the fallback has its tests)."""
    found = probe()
    assert found.available, f"no shell sandbox here: {found.why_not} (apt-get install bubblewrap)"


needs_bwrap = pytest.mark.usefixtures("bwrap")


@pytest.fixture
def bot_files(home: Path) -> Path:
    """A LARKBOT_HOME with secrets, a config file, a database and its journals, and a knowledge
    folder that must stay visible."""
    (home / ".secrets").mkdir(mode=0o700)
    (home / ".secrets" / "app_secret").write_text(SECRET + "\n")
    (home / "config.yaml").write_text(CONFIG)
    for name in ("larkbot.db", "larkbot.db-wal", "larkbot.db-journal"):
        (home / name).write_text(DB_PAGE)
    (home / "knowledge").mkdir()
    (home / "knowledge" / "note.md").write_text("visible-note\n")
    (home / "tools").mkdir()
    (home / "tools" / "plugin.py").write_text("PLUGIN = 1\n")
    return home


async def _run(config: dict[str, object], command: str) -> str:
    async with tool_runtime({"tools": {"shell": config}}) as runtime:
        return (await ShellTool(runtime).run(command=command)).content


async def _doctor_line(runtime: ToolRuntime) -> CheckResult:
    async with httpx.AsyncClient() as http:
        return await check_sandbox(runtime.settings, http)


@pytest.fixture
async def rt(home: Path) -> AsyncIterator[ToolRuntime]:
    async with tool_runtime({}) as runtime:
        yield runtime


@needs_bwrap
async def test_the_bots_own_files_are_not_there(bot_files: Path, rt: ToolRuntime) -> None:
    home, tool = bot_files, ShellTool(rt)
    command = (
        f"cat {home}/.secrets/app_secret {home}/config.yaml {home}/larkbot.db-wal; "
        f"sqlite3 {home}/larkbot.db .dump; cat {home}/* {home}/.[a-z]*/*; "
        f"cat {home}/knowledge/note.md; ls -A {home}/.secrets"
    )
    out = (await tool.run(command=command)).content
    assert SECRET not in out and "sk-config-file" not in out and DB_PAGE not in out
    assert "No such file or directory" in out  # .secrets/ is empty
    assert "Permission denied" in out  # the config and database files are /dev/null, unopenable
    assert out.endswith("visible-note\n[exit code 0]")  # the rest of LARKBOT_HOME is as it was


@needs_bwrap
async def test_writes_land_where_they_did(bot_files: Path, rt: ToolRuntime, tmp_path: Path) -> None:
    """The working directory, /tmp and LARKBOT_HOME are written as before; the hidden files can
    be neither replaced nor removed from inside."""
    home, out_file = bot_files, tmp_path / "work" / "out.txt"
    out_file.parent.mkdir()
    command = (
        f"echo kept > {out_file}; echo note > {home}/knowledge/new.md; "
        f"echo top > {home}/top-level.txt; rm -rf {home}/knowledge/new.md; "
        f"rm -rf {home}/.secrets {home}/config.yaml {home}/larkbot.db*; "
        f"echo x > {home}/.secrets/planted; umount {home}/config.yaml {home}/.secrets; "
        f"cat {home}/config.yaml {home}/.secrets/app_secret; "
        f"echo 'import os' >> {home}/tools/plugin.py"
    )
    out = (await ShellTool(rt).run(command=command)).content
    assert out_file.read_text() == "kept\n"
    assert (home / "top-level.txt").read_text() == "top\n"
    assert not (home / "knowledge" / "new.md").exists()
    assert "Device or resource busy" in out and "Read-only file system" in out
    assert (home / ".secrets" / "app_secret").read_text() == SECRET + "\n"  # untouched
    assert (home / "config.yaml").read_text() == CONFIG
    assert (home / "larkbot.db-wal").read_text() == DB_PAGE
    assert not (home / ".secrets" / "planted").exists()
    assert "sk-config-file" not in out and SECRET not in out  # the masks stay (no capabilities)
    assert (home / "tools" / "plugin.py").read_text() == "PLUGIN = 1\n"  # plugins: read-only


@needs_bwrap
async def test_a_secrets_folder_made_later_is_hidden_too(home: Path, rt: ToolRuntime) -> None:
    """With no .secrets/ yet, the first call makes it (empty, private), so it is masked."""
    assert not (home / ".secrets").exists()
    tool = ShellTool(rt)
    await tool.run(command="true")
    assert (home / ".secrets").stat().st_mode & 0o777 == 0o700
    (home / ".secrets" / "late").write_text(SECRET)
    out = (await tool.run(command=f"cat {home}/.secrets/late")).content
    assert SECRET not in out and "No such file or directory" in out


@pytest.fixture
def bot_process() -> Iterator[int]:
    """Another process with a key in its environment, as the bot's own is."""
    proc = subprocess.Popen(["sleep", "120"], env={"LLM_API_KEY": ENV_SECRET})
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def _read_environ(pid: int) -> str:
    return f"grep -a -o 'LLM_API_KEY=[^[:cntrl:]]*' /proc/{pid}/environ"


@needs_bwrap
async def test_no_other_process_is_visible(rt: ToolRuntime, bot_process: int) -> None:
    command = (
        f"ls /proc | grep -c '^[0-9]'; cat /proc/1/environ; {_read_environ(bot_process)}; "
        "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"
    )
    out = (await ShellTool(rt).run(command=command)).content
    own = Path("/proc/self/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    assert ENV_SECRET not in out and own not in out and "sleep 120" not in out
    assert int(out.split()[0]) <= 6  # the sandbox's init, the shell and its pipeline


async def test_without_the_sandbox_the_classifier_alone_guards(
    bot_files: Path, bot_process: int
) -> None:
    """`off`: the same reads succeed (what the sandbox takes away), and doctor says so."""
    command = f"cat {bot_files}/.secrets/app_secret; {_read_environ(bot_process)}"
    out = await _run({"sandbox": "off"}, command)
    assert SECRET in out and ENV_SECRET in out
    async with tool_runtime({"tools": {"shell": {"sandbox": "off"}}}) as runtime:
        line = await _doctor_line(runtime)
    assert line.ok and "off" in line.detail and "only the command classifier" in line.detail


def _bin_without_bwrap(tmp_path: Path, failing_bwrap: bool) -> str:
    """A PATH with bash and cat, and either no bwrap or one that cannot make namespaces."""
    path = tmp_path / "bin"
    path.mkdir()
    for tool in ("bash", "cat"):
        (path / tool).symlink_to(next(Path(d, tool) for d in ("/usr/bin", "/bin")))
    if failing_bwrap:
        fake = path / "bwrap"
        fake.write_text(
            "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
        )
        fake.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("failing_bwrap", [False, True], ids=["not installed", "no userns"])
async def test_unavailable_sandbox_auto_warns_and_bwrap_refuses(
    bot_files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing_bwrap: bool
) -> None:
    monkeypatch.setenv("PATH", _bin_without_bwrap(tmp_path, failing_bwrap))
    why = "cannot create namespaces" if failing_bwrap else "not installed"
    async with tool_runtime({}) as runtime:  # auto: runs unsandboxed
        out = (await ShellTool(runtime).run(command="echo ran")).content
        line = await _doctor_line(runtime)
    assert out.startswith("ran")
    assert line.ok and line.detail.startswith("WARNING: none") and why in line.detail
    assert "only the command classifier guards" in line.detail
    async with tool_runtime({"tools": {"shell": {"sandbox": "bwrap"}}}) as runtime:
        result = await ShellTool(runtime).run(command=f"echo ran > {tmp_path}/ran")
        line = await _doctor_line(runtime)
    assert result.is_error and "nothing was run" in result.content
    assert not (tmp_path / "ran").exists()
    assert not line.ok and why in line.detail and "bubblewrap" in line.fix


@needs_bwrap
async def test_doctor_names_the_sandbox(rt: ToolRuntime) -> None:
    assert "tools.builtin._sandbox:check_sandbox" in CHECKS
    line = await _doctor_line(rt)
    assert line.ok and line.detail.startswith("bwrap sandbox") and "PID namespace" in line.detail


@needs_bwrap
async def test_a_database_and_config_elsewhere_are_hidden_too(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """storage.url in a subfolder or outside LARKBOT_HOME, a config named by LARKBOT_CONFIG."""
    inside, outside = home / "data" / "bot.db", tmp_path / "srv" / "bot.db"
    config = tmp_path / "etc" / "larkbot.yaml"
    for path, text in ((inside, DB_PAGE), (outside, DB_PAGE), (config, CONFIG)):
        path.parent.mkdir(parents=True)
        path.write_text(text)
    (outside.parent / "bot.db-wal").write_text(DB_PAGE)
    (outside.parent / "notes.txt").write_text("visible-note\n")
    monkeypatch.setenv("LARKBOT_CONFIG", str(config))
    for db in (inside, outside):
        command = f"cat {db} {db}-wal {config} {outside.parent}/notes.txt"
        out = await _run_with_db(db, command)
        assert DB_PAGE not in out and "sk-config-file" not in out, out
        assert "visible-note" in out


async def _run_with_db(db: Path, command: str) -> str:
    async with tool_runtime({"storage": {"url": f"sqlite:///{db}"}}) as runtime:
        return (await ShellTool(runtime).run(command=command)).content

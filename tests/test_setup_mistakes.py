"""Set-up mistakes are named where the operator looks, and only there: a refused LLM key at
the start of `chat` and in `doctor` (never a ✓ for what could not be checked), "not configured
yet" for people who only chat with the bot, the home-folder remedy for where larkbot runs."""

from __future__ import annotations

import errno
from pathlib import Path

import httpx
import pytest

from larkbot.config import parse_settings
from larkbot.doctor import check_storage
from larkbot.preflight import StartupError, check_writable, home_remedy, in_container
from tests.fakes.lark_server import FakeLark
from tests.fakes.llm import FakeLLM
from tests.lark_harness import OWNER, Served, message_event, settings_for
from tests.test_core_cli import larkbot, write_config


async def test_chat_names_a_refused_key_before_the_first_question(home: Path) -> None:
    async with FakeLLM(api_key="the-right-key") as llm:
        config = write_config(home, llm.base_url, key="wrong")
        code, _, err = await larkbot(home, "chat", "--config", str(config), stdin=b"/exit\n")
    assert code == 0
    assert f"✗ {llm.base_url} refused llm.api_key (HTTP 401)" in err
    assert "→ check that llm.api_key (LLM_API_KEY)" in err


async def test_doctor_never_ticks_what_it_could_not_check(home: Path) -> None:
    async with FakeLLM(api_key="the-right-key") as llm:
        config = write_config(home, llm.base_url, key="wrong")
        code, out, _ = await larkbot(home, "doctor", "--config", str(config))
    assert code == 1
    assert "✗ llm" in out and "refused llm.api_key" in out
    model = next(line for line in out.splitlines() if " model " in f" {line} ")
    assert model.startswith("–") and "not probed" in model  # not ✓, and not a second ✗


async def test_people_who_only_chat_are_told_not_configured_yet(
    home: Path, fake_lark: FakeLark
) -> None:
    async with FakeLLM(api_key="the-right-key") as llm:
        settings = settings_for(home, fake_lark.domain, llm.base_url)  # key "sk-test": refused
        async with Served(settings) as s:
            await s.post_event(message_event("hello", sender="ou_someone", message_id="om_n"))
            await s.post_event(message_event("hello", sender=OWNER, chat_id="oc_o"))
            assert await s.app.idle(30)
    by_reply = {m["reply_to"]: m["body"]["text"] for m in fake_lark.sent}
    stranger = by_reply.pop("om_n")
    assert "not configured yet" in stranger
    assert "api_key" not in stranger and "HTTP" not in stranger  # no operator advice
    (owner,) = by_reply.values()
    assert "llm.api_key" in owner  # the owner gets the fix


def test_read_only_home_remedy_depends_on_where_larkbot_runs(tmp_path: Path) -> None:
    home = Path("/data")
    read_only = OSError(errno.EROFS, "Read-only file system")
    denied = OSError(errno.EACCES, "Permission denied")
    docker_ro = home_remedy(home, read_only, container=True, uid=10001)
    assert "drop `:ro`" in docker_ro and "LARKBOT_HOME" in docker_ro
    host_ro = home_remedy(Path("/mnt/cd"), read_only, container=False, uid=1000)
    assert "read-only file system" in host_ro and "LARKBOT_HOME=" in host_ro
    assert ":ro" not in host_ro
    docker_denied = home_remedy(home, denied, container=True, uid=10001)
    assert "sudo chown -R 10001:10001 <host folder>" in docker_denied
    assert "--user $(id -u):$(id -g)" in docker_denied
    host_denied = home_remedy(Path("/srv/bot"), denied, container=False, uid=1000)
    assert "sudo chown -R $(id -un) /srv/bot" in host_denied and "docker" not in host_denied

    root = tmp_path / "root"
    (root / "proc/1").mkdir(parents=True)
    (root / "proc/1/cgroup").write_text("0::/init.scope\n")
    assert not in_container(root)
    (root / "proc/1/cgroup").write_text("0::/system.slice/docker-0123abcd.scope\n")
    assert in_container(root)
    (root / "proc/1/cgroup").write_text("0::/\n")
    (root / ".dockerenv").write_text("")
    assert in_container(root)


async def test_doctor_reports_an_unwritable_folder_with_the_start_screens_words(
    home: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # a folder below a file cannot be created, whoever runs the test
    settings = parse_settings({"storage": {"url": f"sqlite:///{blocker}/db/larkbot.db"}})
    with pytest.raises(StartupError) as caught:
        check_writable(settings)
    screen = str(caught.value).splitlines()
    async with httpx.AsyncClient() as http:
        storage = await check_storage(settings, http)
    assert not storage.ok and storage.detail == screen[0]
    assert storage.detail.startswith(f"cannot write to {blocker / 'db'} (")
    assert screen[1] == "  larkbot keeps its database, knowledge and secrets there."
    assert screen[2] == f"  Fix: {storage.fix}." and "LARKBOT_HOME" in storage.fix

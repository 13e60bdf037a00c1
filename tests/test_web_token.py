"""The web token: generated at first start and printed once, stored hashed, rotated by the CLI."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

from larkbot.storage.db import Database
from larkbot.web.auth import WebAuth, digest, web_auth


async def test_generated_once_printed_once_stored_hashed(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/t.db")
    first, second = io.StringIO(), io.StringIO()
    try:
        await WebAuth(db, out=first).init()
        await WebAuth(db, out=second).init()  # a restart (or a second replica): silent
        token = first.getvalue().rsplit(" ", 1)[-1].strip()
        assert len(token) >= 40 and second.getvalue() == ""
        async with db.engine.connect() as conn:
            stored = (await conn.execute(sa.select(web_auth.c.value))).scalars().all()
        assert stored == [digest(token)] and token not in stored  # only the hash is kept
        auth = WebAuth(db)
        assert await auth.token_ok(token)
        assert not await auth.token_ok(token[:-1] + "x") and not await auth.token_ok("")
        cookie = await auth.make_cookie()
        assert await auth.cookie_ok(cookie)
        assert not await auth.cookie_ok(cookie[:-1] + ("0" if cookie[-1] != "0" else "1"))
        assert not await auth.cookie_ok("1." + cookie.split(".", 1)[1])  # expired
        new = await auth.rotate()
        assert await auth.token_ok(new) and not await auth.token_ok(token)
        assert not await auth.cookie_ok(cookie)  # rotation logs every browser out
    finally:
        await db.close()


async def test_configured_token_wins_and_nothing_is_generated(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/t.db")
    out = io.StringIO()
    try:
        auth = WebAuth(db, "from-config", out=out)
        await auth.init()
        assert out.getvalue() == "" and await auth.token_ok("from-config")
    finally:
        await db.close()


def test_web_token_command_rotates(home: Path) -> None:
    env = {"LARKBOT_HOME": str(home), "PATH": "/usr/bin:/bin"}
    runs = [
        subprocess.run(
            [sys.executable, "-m", "larkbot", "web-token"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        for _ in range(2)
    ]
    assert [r.returncode for r in runs] == [0, 0]
    tokens = [r.stdout.strip() for r in runs]
    assert tokens[0] != tokens[1] and "stop working" in runs[0].stderr
    refused = subprocess.run(
        [sys.executable, "-m", "larkbot", "web-token"],
        capture_output=True, text=True, timeout=60, env={**env, "LARKBOT_WEB_TOKEN": "fixed"},
    )  # fmt: skip
    assert refused.returncode == 1 and "web.token" in refused.stderr

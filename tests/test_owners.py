"""Owners in the database: a stable, expiring, single-use pairing code; `larkbot owner`."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from larkbot.cli import main
from larkbot.lark.owners import Owners, legacy_owner, pairing_table
from larkbot.storage.db import Database


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/owners.db")
    yield database
    await database.close()


async def test_pairing_code_is_the_same_across_restarts_and_replicas(db: Database) -> None:
    first, second = Owners(db, []), Owners(db, [])
    await first.init()
    await second.init()
    assert first.pairing_code and first.pairing_code == second.pairing_code


async def test_pairing_code_works_once(db: Database) -> None:
    a, b = Owners(db, []), Owners(db, [])
    await a.init()
    await b.init()
    code = a.pairing_code or ""
    assert (await a.claim("ou_a", code, is_dm=True)).ok
    assert not (await b.claim("ou_b", code, is_dm=True)).ok
    assert await b.check("ou_a") and not await b.check("ou_b")


async def test_an_expired_code_is_refused_and_replaced(db: Database) -> None:
    owners = Owners(db, [])
    await owners.init()
    old = owners.pairing_code or ""
    async with db.engine.begin() as conn:
        await conn.execute(sa.update(pairing_table).values(expires_at=time.time() - 1))
    result = await owners.claim("ou_a", old, is_dm=True)
    assert not result.ok and "expired" in result.message
    assert owners.pairing_code not in (None, old)
    assert (await owners.claim("ou_a", owners.pairing_code or "", is_dm=True)).ok


async def test_removing_the_last_owner_reopens_pairing(db: Database) -> None:
    owners = Owners(db, [])
    await owners.init()
    await owners.add("ou_a")
    assert owners.pairing_code is None and await owners.has_owner()
    assert await owners.remove("ou_a")
    assert not await owners.check("ou_a") and owners.pairing_code
    assert (await owners.claim("ou_new", owners.pairing_code, is_dm=True)).ok


async def test_a_claim_from_before_the_owner_table_is_kept(db: Database) -> None:
    await db.create(legacy_owner)
    async with db.engine.begin() as conn:
        await conn.execute(
            sa.insert(legacy_owner).values(slot="owner", open_id="ou_old", claimed_at=1.0)
        )
    owners = Owners(db, [])
    await owners.init()
    assert await owners.check("ou_old") and owners.pairing_code is None


def test_owner_command_lists_adds_and_removes(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LARKBOT_OWNER_OPEN_IDS", "ou_cfg")
    assert main(["owner", "add", "ou_alice"]) == 0
    assert main(["owner", "list"]) == 0
    out = capsys.readouterr().out
    assert "ou_alice is now an owner" in out and "ou_cfg  (owner.open_ids" in out
    assert "ou_alice  (cli)" in out
    assert main(["owner", "remove", "ou_cfg"]) == 1  # configured owners are changed in config
    assert "remove it there" in capsys.readouterr().err
    assert main(["owner", "remove", "ou_alice"]) == 0
    assert main(["owner", "add", "not-an-id"]) == 2
    monkeypatch.delenv("LARKBOT_OWNER_OPEN_IDS")
    assert main(["owner", "list"]) == 0  # no Lark app: nobody could DM the bot a /claim
    out = capsys.readouterr().out
    assert "Lark is not connected: `larkbot setup`" in out and "/claim" not in out
    monkeypatch.setenv("LARK_APP_ID", "cli_test")
    monkeypatch.setenv("LARK_APP_SECRET", "secret")
    assert main(["owner", "list"]) == 0
    out = capsys.readouterr().out
    assert "pairing is open" in out and "/claim " in out

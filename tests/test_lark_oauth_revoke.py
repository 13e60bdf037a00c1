"""`revoke_grant`, shared by `/auth revoke` and `larkbot auth revoke`: our copy goes whatever
Lark answers, and the caller learns why Lark was not told."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from larkbot.lark.oauth.accounts import Accounts, OAuthError, revoke_grant
from larkbot.storage.db import Database
from larkbot.storage.user_tokens import Pair, TokenStore
from larkbot.storage.vault import Vault, VaultMismatch

ALICE = "ou_alice"


class _Accounts(Accounts):
    """Records revoked tokens; refuses them all when `refuse`."""

    def __init__(self, refuse: bool = False) -> None:
        self.revoked: list[str] = []
        self.refuse = refuse

    async def revoke(self, token: str) -> None:
        """Record `token`, or refuse it as Lark would."""
        if self.refuse:
            raise OAuthError("invalid_token")
        self.revoked.append(token)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    """A fresh SQLite file holding Alice's grant, sealed with the key in `tmp_path/a`."""
    database = Database(f"sqlite:///{tmp_path}/tokens.db")
    store = TokenStore(database, Vault(tmp_path / "a"), "cli_app")
    await store.init()
    await store.save(ALICE, "Alice", Pair("u-access", "ur-refresh", 7200, 86400))
    yield database
    await database.close()


async def test_tells_lark_the_refresh_token_and_deletes(db: Database, tmp_path: Path) -> None:
    """Lark hears the refresh token; the grant is gone and nothing is reported."""
    store, accounts = TokenStore(db, Vault(tmp_path / "a"), "cli_app"), _Accounts()
    assert await revoke_grant(store, accounts, ALICE) == (True, None)
    assert accounts.revoked == ["ur-refresh"]
    assert await store.grant(ALICE) is None
    assert await revoke_grant(store, accounts, ALICE) == (False, None)  # nothing left


async def test_lark_refusing_or_another_key_still_deletes(db: Database, tmp_path: Path) -> None:
    """Lark's refusal and a key that does not open the tokens are returned, not raised."""
    store = TokenStore(db, Vault(tmp_path / "a"), "cli_app")
    removed, unheard = await revoke_grant(store, _Accounts(refuse=True), ALICE)
    assert removed and isinstance(unheard, OAuthError) and unheard.error == "invalid_token"

    await TokenStore(db, Vault(tmp_path / "a"), "cli_app").save(ALICE, "Alice", Pair("u", "ur"))
    other, accounts = TokenStore(db, Vault(tmp_path / "b"), "cli_app"), _Accounts()
    removed, unheard = await revoke_grant(other, accounts, ALICE)
    assert removed and isinstance(unheard, VaultMismatch) and accounts.revoked == []


async def test_without_a_vault_only_deletes(db: Database) -> None:
    """A host without the key (list-and-delete store) deletes and tells Lark nothing."""
    accounts = _Accounts()
    assert await revoke_grant(TokenStore(db, None, "cli_app"), accounts, ALICE) == (True, None)
    assert accounts.revoked == []

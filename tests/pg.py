"""A fresh PostgreSQL database per test on the server named by LARKBOT_TEST_PG_URL.

`make test` starts a throwaway cluster (tests/pg_cluster.sh) and exports the URL. Without it the
PostgreSQL tests fail with MISSING_URL (a silent skip would hide a broken CI setup); deselect
them explicitly with -m "not postgres".
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.engine import make_url

ENV = "LARKBOT_TEST_PG_URL"
MISSING_URL = (
    f"{ENV} is not set: run `make test` (it starts a throwaway PostgreSQL), or run "
    "tests/pg_cluster.sh start DIR and export the URL it prints, or deselect these tests "
    'with -m "not postgres"'
)


@contextlib.asynccontextmanager
async def fresh_database() -> AsyncIterator[str]:
    """CREATE DATABASE test_<random> on the server, yield its URL, DROP it afterwards."""
    admin = os.environ.get(ENV, "")
    if not admin:
        pytest.fail(MISSING_URL)
    try:
        import asyncpg
    except ModuleNotFoundError:
        pytest.fail(f"{ENV} is set but asyncpg is missing: pip install -e '.[postgres]'")
    name = f"test_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        yield make_url(admin).set(database=name).render_as_string(hide_password=False)
    finally:
        conn = await asyncpg.connect(admin)
        try:  # FORCE: a test that leaked a pooled connection must not leak the database too
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()

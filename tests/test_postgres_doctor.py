"""`larkbot doctor` with storage.url on PostgreSQL: a fresh database checks out, no password shown.

Needs LARKBOT_TEST_PG_URL (the `pg_url` fixture; `make test` provides it).
"""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy.engine import make_url

from larkbot.config import parse_settings
from larkbot.doctor import check_storage
from larkbot.scheduler.doctor import check_scheduler


async def test_doctor_on_a_fresh_postgres_database(home: Path, pg_url: str) -> None:
    # The test cluster trusts 127.0.0.1, so any password works: it stands for a real one.
    url = make_url(pg_url).set(password="s3cret-pw").render_as_string(hide_password=False)
    settings = parse_settings({"storage": {"url": url}})
    async with httpx.AsyncClient() as http:
        storage = await check_storage(settings, http)
        scheduler = await check_scheduler(settings, http)
    assert storage.ok and "is writable" in storage.detail, storage
    assert scheduler.ok and "no scheduled tasks" in scheduler.detail, scheduler
    assert "no replica is running jobs" in scheduler.detail
    assert "s3cret-pw" not in storage.detail + scheduler.detail

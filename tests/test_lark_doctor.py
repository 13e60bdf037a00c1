"""`larkbot doctor`'s Lark check against the fake platform."""

from __future__ import annotations

from pathlib import Path

import httpx

from larkbot.config import parse_settings
from larkbot.lark.api.doctor_check import check_lark
from tests.fakes.lark_server import FakeLark

TOKEN = "POST /open-apis/auth/v3/tenant_access_token/internal"


async def test_lark_check(home: Path, fake_lark: FakeLark) -> None:
    good = parse_settings(
        {"lark": {"app_id": "cli_test", "app_secret": "secret", "domain": fake_lark.domain}}
    )
    async with httpx.AsyncClient() as http:
        ok = await check_lark(good, http)
        assert ok.ok and "ou_bot" in ok.detail
        fake_lark.fail_next(TOKEN, status=400, code=99991543, msg="app secret invalid")
        fresh = parse_settings(
            {"lark": {"app_id": "cli_x", "app_secret": "s3cr3t-value", "domain": fake_lark.domain}}
        )
        bad = await check_lark(fresh, http)
        assert not bad.ok and "99991543" in bad.detail and "credentials page" in bad.fix
        missing = await check_lark(parse_settings({}), http)
        assert not missing.ok and "LARK_APP_ID" in missing.fix
        assert "s3cr3t-value" not in bad.detail + bad.fix  # never print the secret

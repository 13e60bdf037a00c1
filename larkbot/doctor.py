"""`larkbot doctor`: check config, storage and the LLM; say what is wrong and how to fix it.

Checks are async functions `(settings, http) -> CheckResult` (or a list of them) listed in
CHECKS, in order.
Other subsystems add theirs with one line: a callable, or a lazily imported
"module:function" string (so doctor does not import subsystems it is not asked about).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import time
from collections.abc import Awaitable, Callable

import httpx

from larkbot.checks import CheckResult
from larkbot.config import Settings
from larkbot.llm_check import auth_problem
from larkbot.logs import configure_logging
from larkbot.misconfig import llm_key
from larkbot.preflight import StartupError, check_writable
from larkbot.runtime_factory import new_http_client
from larkbot.storage.db import Database, safe_url
from larkbot.storage.sessions import SessionStore

CHECK_TIMEOUT = 20.0


Check = Callable[[Settings, httpx.AsyncClient], Awaitable[CheckResult | list[CheckResult]]]


async def check_config(settings: Settings, http: httpx.AsyncClient) -> CheckResult:
    """Where the config came from (it already parsed, or doctor would not be running)."""
    if settings.source is None:
        where = settings.home / "config.yaml"
        return CheckResult("config", True, f"no config file at {where}; using defaults")
    return CheckResult("config", True, f"loaded from {settings.source}")


async def check_storage(settings: Settings, http: httpx.AsyncClient) -> CheckResult:
    """Open the database and write, read and delete a probe session."""
    try:
        check_writable(settings)  # a read-only or foreign home: the remedy for where we run
    except StartupError as err:
        return CheckResult("storage", False, f"{err.problem}.", err.fix)
    db = Database(settings.storage.url)
    try:
        store = SessionStore(db)
        await store.init()
        probe = f"doctor:{time.time_ns()}"
        await store.append(probe, [{"role": "user", "content": "probe"}])
        ok = await store.load(probe) == [{"role": "user", "content": "probe"}]
        await store.clear(probe)
    except Exception as err:
        return CheckResult(
            "storage",
            False,
            f"cannot use {safe_url(settings.storage.url)}: {type(err).__name__}: {err}",
            "check storage.url and that its directory is writable",
        )
    finally:
        await db.close()
    if not ok:
        return CheckResult("storage", False, "wrote a row but read back something else")
    return CheckResult("storage", True, f"{safe_url(settings.storage.url)} is writable")


def _auth(settings: Settings) -> dict[str, str]:
    key = settings.llm.api_key.get_secret_value()
    return {"Authorization": f"Bearer {key}"} if key else {}


def _auth_failure(settings: Settings, status: int) -> CheckResult:
    problem = auth_problem(settings, status)  # the same words as serve's and chat's start
    return CheckResult("llm", False, problem.problem, problem.fix)


async def _probe_completion(settings: Settings, http: httpx.AsyncClient) -> CheckResult:
    body = {
        "model": settings.llm.model,
        "messages": [{"role": "user", "content": "ping"}],
        "max_tokens": 1,
    }
    url = settings.llm.base_url.rstrip("/") + "/chat/completions"
    resp = await http.post(url, json=body, headers=_auth(settings), timeout=CHECK_TIMEOUT)
    if resp.status_code in (401, 403):
        return _auth_failure(settings, resp.status_code)
    if resp.status_code >= 400:
        return CheckResult(
            "llm",
            False,
            f"a 1-token completion with model {settings.llm.model!r} failed "
            f"(HTTP {resp.status_code}: {resp.text[:200]})",
            "check llm.model and llm.base_url (usually ends in /v1)",
        )
    return CheckResult("llm", True, f"{settings.llm.model} answers at {settings.llm.base_url}")


async def check_llm(settings: Settings, http: httpx.AsyncClient) -> CheckResult:
    """GET {base_url}/models; fall back to a 1-token completion when the model is not listed."""
    base = settings.llm.base_url.rstrip("/")
    missing_key = llm_key(settings)
    if missing_key is not None:  # hosted endpoint, no key: no need to ask it
        return CheckResult("llm", False, missing_key.problem, missing_key.fix)
    try:
        resp = await http.get(f"{base}/models", headers=_auth(settings), timeout=CHECK_TIMEOUT)
        if resp.status_code in (401, 403):
            return _auth_failure(settings, resp.status_code)
        if resp.status_code == 200:
            data = resp.json().get("data") or []
            ids = {m.get("id") for m in data if isinstance(m, dict)}
            if settings.llm.model in ids:
                return CheckResult("llm", True, f"{base} is reachable; {settings.llm.model} listed")
        return await _probe_completion(settings, http)
    except httpx.TimeoutException:
        return CheckResult(
            "llm", False, f"{base} did not answer in {CHECK_TIMEOUT:g} s", "check llm.base_url"
        )
    except httpx.TransportError as err:
        return CheckResult(
            "llm",
            False,
            f"cannot reach {base} ({type(err).__name__}: {err})",
            "check llm.base_url, the network, and that the server is running",
        )


CHECKS: list[Check | str] = [
    check_config,
    check_storage,
    check_llm,
    "larkbot.providers.probe:check_model",
    "larkbot.doctor_setup:check_setup",
    "larkbot.lark.api.doctor_check:check_lark",
    "larkbot.setup.doctor:check_scopes",
    "larkbot.lark.api.doctor_check:check_lark_budget",
    "larkbot.lark.oauth.doctor:check_oauth",
    "larkbot.scheduler.doctor:check_scheduler",
    "tools.browser.doctor:check_browser",
    "larkbot.desktop:check_desktop",
    "tools.builtin._sandbox:check_sandbox",
]


def _resolve(check: Check | str) -> Check:
    if callable(check):
        return check
    module, _, name = check.partition(":")
    func: Check = getattr(importlib.import_module(module), name)
    return func


async def run_checks(settings: Settings, http: httpx.AsyncClient) -> list[CheckResult]:
    """Run every check in order; a crashing check is a failed line, not a traceback."""
    results: list[CheckResult] = []
    for entry in CHECKS:
        label = entry if isinstance(entry, str) else entry.__name__.removeprefix("check_")
        try:
            check = _resolve(entry)
            found = await asyncio.wait_for(check(settings, http), CHECK_TIMEOUT + 5)
            results.extend(found if isinstance(found, list) else [found])
        except Exception as err:
            results.append(CheckResult(label, False, f"check crashed: {type(err).__name__}: {err}"))
    return results


def print_results(results: list[CheckResult]) -> None:
    """✓/✗ lines (– for a check that could not run), with the fix under each failure."""
    width = max((len(r.name) for r in results), default=0)
    for r in results:
        mark = "–" if r.skipped else "✓" if r.ok else "✗"  # never ✓ for what was not checked
        print(f"{mark} {r.name.ljust(width)}  {r.detail}")
        if not r.ok and r.fix:
            print(f"  {' ' * width}  → {r.fix}")


async def _main(settings: Settings) -> int:
    async with new_http_client() as http:
        results = await run_checks(settings, http)
    print_results(results)
    return 0 if all(r.ok for r in results) else 1


def run_doctor(settings: Settings, args: argparse.Namespace) -> int:
    """Entry point of `larkbot doctor`: exit 1 on any failure."""
    configure_logging("warning", "console")
    return asyncio.run(_main(settings))

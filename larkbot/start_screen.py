"""What `serve` says once it listens: the set-up warnings, and on a terminal a short screen —
where the web chat is, the web token when it was just made, what is missing, the next step."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

from larkbot.healthcheck import WILDCARDS
from larkbot.llm_check import key_problem
from larkbot.logs import get_logger
from larkbot.misconfig import Problem, llm_key

log = get_logger("larkbot.start")


@dataclass
class StartState:
    """What the screen shows, gathered from the running App (or built by a test)."""

    web_url: str = ""  # "" when the web chat is off
    web_token: str = ""  # only when generated at this start (shown once)
    lark: str = "not set up"  # "not set up" | "connected as …" | "refused: …"
    lark_fix: str = ""
    llm: Problem | None = None
    pairing_code: str = ""  # no owner yet
    missing: list[str] = field(default_factory=list)


def web_url(host: str, port: int) -> str:
    """The address a browser on this machine opens."""
    target = "127.0.0.1" if host in WILDCARDS else host
    return f"http://[{target}]:{port}/" if ":" in target else f"http://{target}:{port}/"


def next_step(state: StartState) -> str:
    """The one thing to do next, most blocking first."""
    if state.llm is not None:
        return state.llm.fix
    if state.lark == "not set up":
        chat = f" (the web chat at {state.web_url} works meanwhile)" if state.web_url else ""
        return f"run `larkbot setup` to connect Lark and become its owner{chat}"
    if state.lark_fix:
        return state.lark_fix
    if state.pairing_code:
        return f"DM the bot `/claim {state.pairing_code}` in Lark to become its owner"
    return "DM the bot in Lark"


def render(state: StartState) -> str:
    """The screen's text."""
    lines = ["", "larkbot is running"]
    if state.web_url:
        lines.append(f"  web chat   {state.web_url}")
    if state.web_token:
        lines.append(f"  web token  {state.web_token}  (shown once; `larkbot web-token` renews)")
    lines.append(f"  Lark       {state.lark}")
    for item in state.missing:
        lines.append(f"  missing    {item}")
    lines.append(f"  next       {next_step(state)}")
    lines.append("  Ctrl-C stops (answers in progress finish first); Ctrl-C twice: at once")
    return "\n".join(lines) + "\n"


async def gather(app: Any, runner: Any, host: str, port: int) -> StartState:
    """The running App's state for the screen (and the LLM key check, logged if it fails)."""
    s = app.settings
    state = StartState()
    if s.web.enabled:
        from larkbot.web.handlers import WEB_KEY

        state.web_url = web_url(host, port)
        svc = runner.app.get(WEB_KEY)
        state.web_token = svc.auth.generated if svc is not None and svc.auth else ""
    if app.client is not None:
        failed = app.client.transport.token_error
        if not app.client.transport.has_token() and failed is not None:
            state.lark, state.lark_fix = f"refused: {failed[1].msg}", failed[1].hint
            state.missing.append(f"Lark credentials accepted ({failed[1].hint})")
        else:
            state.lark = f"connected ({s.lark.mode})"
    else:  # `larkbot setup` also makes the scanner the owner: no separate owner line
        state.missing.append(
            "Lark app credentials: `larkbot setup` (or LARK_APP_ID / LARK_APP_SECRET)"
        )
    state.llm = await key_problem(s, app.core.http)
    if state.llm is not None:
        state.missing.append(f"a working LLM key: {state.llm.problem}")
        if llm_key(s) is None:  # refused by the endpoint: not among the warnings already logged
            log.warning("misconfigured", problem=state.llm.problem, fix=state.llm.fix, key="llm")
    if app.client is not None and not await app.owners.has_owner():
        state.pairing_code = str(getattr(app.owners, "pairing_code", "") or "")
        state.missing.append("an owner")
    return state


def show(state: StartState, out: TextIO | None = None) -> None:
    """Print the screen (to stderr, where the log lines go)."""
    print(render(state), file=out or sys.stderr, flush=True)


async def announce(app: Any, runner: Any, host: str, port: int, screen: bool) -> None:
    """Once serving: log what the start-up checks found; with `screen`, print the screen.
    Never fails the start: a check that cannot run is a warning."""
    try:
        state = await gather(app, runner, host, port)
    except Exception as err:
        log.warning("start_checks_failed", error=f"{type(err).__name__}: {err}"[:300])
        return
    if screen:
        show(state)

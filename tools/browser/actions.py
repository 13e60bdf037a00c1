"""browser_page's actions: each acts on the session's current tab (or the tab a ref names).

Acting actions end with a fresh snapshot, so the model always holds refs it may use. Every
wait is bounded: actions by the context's 10 s default, navigation by 30 s, `wait` by 30 s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from playwright.async_api import Error as PlaywrightError

from tools.base import Attachment, ToolResult
from tools.browser.engine import BrowserEngine
from tools.browser.pages import (
    PageError,
    guard_readable,
    render,
    resolve_ref,
    settle,
    take_snapshot,
)
from tools.browser.session import BrowserSession, Tab
from tools.browser.snapshot import find_lines
from tools.browser.urls import UrlRefused, check_url
from tools.web.extract import cap, wrap_untrusted

NAVIGATION_TIMEOUT_MS = 30_000
MAX_WAIT_SECONDS = 30.0
READ_LIMIT = 7000
MAX_SCREENSHOT_BYTES = 10 * 1024 * 1024  # Lark's image limit
DOWNLOAD_WAIT_SECONDS = 15.0  # longer downloads are reported with a later result

Args = dict[str, Any]
Action = Callable[[BrowserEngine, BrowserSession, Args], Awaitable[str | ToolResult]]


def current_tab(session: BrowserSession) -> Tab:
    """The tab actions without a ref work on."""
    tab = session.tab()
    if tab is None:
        raise PageError("no tab is open: use action=navigate with a url (or browser_tab open)")
    return tab


async def after(
    engine: BrowserEngine, session: BrowserSession, tab: Tab, done: str, args: Args
) -> str:
    """Settle, snapshot and render: the end of every acting action."""
    await settle(tab)
    if session.downloads is not None:  # a click that started a download: report it here
        await session.downloads.settle(DOWNLOAD_WAIT_SECONDS)
    snap = await take_snapshot(engine, session, tab, args.get("depth"))
    return await render(session, tab, snap, done, bool(args.get("interactive_only")))


async def goto(engine: BrowserEngine, session: BrowserSession, tab: Tab, url: str) -> str:
    """Open a checked URL in `tab`; what happened, for the model."""
    try:
        target = check_url(url, session.allow_private)
    except UrlRefused as err:
        raise PageError(f"refused to open {url}: {err}") from None
    try:
        response = await tab.page.goto(
            target, wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS
        )
    except PlaywrightError as err:
        blocked = "; ".join(session.proxy.take_blocked())
        first = str(err).splitlines()[0][:300]
        raise PageError(f"could not open {target}: {blocked or first}") from None
    await guard_readable(tab)
    status = f" (HTTP {response.status})" if response is not None and response.status >= 400 else ""
    return f"Opened {target}{status}"


async def navigate(engine: BrowserEngine, session: BrowserSession, args: Args) -> str:
    """Open `url` in the current tab (a first tab is opened when there is none)."""
    url = str(args.get("url") or "").strip()
    if not url:
        raise PageError("navigate needs a url")
    tab = session.tab() or await session.open_tab()
    done = await goto(engine, session, tab, url)
    return await after(engine, session, tab, done, args)


async def back(engine: BrowserEngine, session: BrowserSession, args: Args) -> str:
    """Go back one page in the current tab."""
    tab = current_tab(session)
    response = await tab.page.go_back(wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
    done = (
        "Went back"
        if response is not None
        else "There was no page to go back to (or it was cached)"
    )
    return await after(engine, session, tab, done, args)


async def snapshot(engine: BrowserEngine, session: BrowserSession, args: Args) -> str:
    """The current tab's accessibility snapshot with refs."""
    tab = current_tab(session)
    snap = await take_snapshot(engine, session, tab, args.get("depth"))
    return await render(session, tab, snap, "", bool(args.get("interactive_only")))


async def find(engine: BrowserEngine, session: BrowserSession, args: Args) -> str:
    """Snapshot lines (with refs) that contain `text`."""
    text = str(args.get("text") or "").strip()
    if not text:
        raise PageError("find needs a text to look for")
    tab = current_tab(session)
    snap = await take_snapshot(engine, session, tab)
    hits = find_lines(snap.text, text)
    head = f"{len(hits)} element(s) containing {text!r} in snapshot s{snap.number} of {tab.id}:"
    body = "\n".join(hits) if hits else "(none; try read_text or another wording)"
    return f"{head}\n{wrap_untrusted(body, tab.page.url)}"


async def click(engine: BrowserEngine, session: BrowserSession, args: Args) -> str:
    """Click the element `ref` names."""
    tab, locator = resolve_ref(engine, session, str(args.get("ref") or ""))
    await locator.click()
    return await after(engine, session, tab, f"Clicked {args.get('ref')}", args)


async def type_text(engine: BrowserEngine, session: BrowserSession, args: Args) -> str:
    """Fill `text` into the field `ref` names; Enter after it when `submit`."""
    tab, locator = resolve_ref(engine, session, str(args.get("ref") or ""))
    await locator.fill(str(args.get("text") or ""))
    if args.get("submit"):
        await locator.press("Enter")
    done = f"Typed into {args.get('ref')}" + (" and pressed Enter" if args.get("submit") else "")
    return await after(engine, session, tab, done, args)


async def select(engine: BrowserEngine, session: BrowserSession, args: Args) -> str:
    """Choose options (by value or label) in the select `ref` names."""
    values = [str(v) for v in args.get("values") or []]
    if not values:
        raise PageError("select needs values (option values or labels)")
    tab, locator = resolve_ref(engine, session, str(args.get("ref") or ""))
    chosen = await locator.select_option(values)
    return await after(engine, session, tab, f"Selected {chosen} in {args.get('ref')}", args)


async def press(engine: BrowserEngine, session: BrowserSession, args: Args) -> str:
    """Press a key (e.g. Enter, Escape, Control+A) on `ref`, or on the focused element."""
    key = str(args.get("key") or "").strip()
    if not key or len(key) > 40:
        raise PageError("press needs a key such as Enter, Escape, ArrowDown or Control+A")
    if args.get("ref"):
        tab, locator = resolve_ref(engine, session, str(args["ref"]))
        await locator.press(key)
    else:
        tab = current_tab(session)
        await tab.page.keyboard.press(key)
    return await after(engine, session, tab, f"Pressed {key}", args)


async def scroll(engine: BrowserEngine, session: BrowserSession, args: Args) -> str:
    """Scroll the current tab by `dy` pixels (negative: up)."""
    dy = max(-20_000, min(20_000, int(args.get("dy") or 600)))
    tab = current_tab(session)
    await tab.page.mouse.wheel(0, dy)
    position = await tab.page.evaluate(
        "() => new Promise(r => requestAnimationFrame(() => "
        "r([Math.round(scrollY), document.documentElement.scrollHeight])))"
    )
    done = f"Scrolled by {dy} px: now at {position[0]} of {position[1]} px"
    return await after(engine, session, tab, done, args)


async def wait(engine: BrowserEngine, session: BrowserSession, args: Args) -> str:
    """Wait until `text` is visible (at most `seconds`, ≤ 30), or just `seconds`."""
    text = str(args.get("text") or "").strip()
    asked = args.get("seconds")
    seconds = min(float(asked) if asked is not None else (10.0 if text else 1.0), MAX_WAIT_SECONDS)
    tab = current_tab(session)
    if text:
        try:
            await tab.page.get_by_text(text).first.wait_for(state="visible", timeout=seconds * 1000)
        except PlaywrightError:
            raise PageError(f"{text!r} did not appear within {seconds:g} s") from None
        done = f"{text!r} is on the page"
    else:
        await asyncio.sleep(seconds)
        done = f"Waited {seconds:g} s"
    return await after(engine, session, tab, done, args)


async def upload(engine: BrowserEngine, session: BrowserSession, args: Args) -> str:
    """Put files from this chat's inbox into the file input `ref` names."""
    names = [str(p) for p in args.get("paths") or []]
    if not names:
        raise PageError("upload needs paths: files this chat sent (they are in its inbox)")
    files = [inbox_file(session, name) for name in names]
    tab, locator = resolve_ref(engine, session, str(args.get("ref") or ""))
    await locator.set_input_files([str(f) for f in files])
    done = f"Chose {', '.join(f.name for f in files)} in {args.get('ref')}"
    return await after(engine, session, tab, done, args)


def inbox_file(session: BrowserSession, name: str) -> Path:
    """A file inside this chat's inbox (symlinks resolved first), or PageError."""
    root = session.upload_root
    if root is None:
        raise PageError("uploads are not available here")
    candidate = Path(name).expanduser()
    path = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if not path.is_relative_to(root.resolve()) or not path.is_file():
        raise PageError(
            f"{name} is not a file in this chat's inbox ({root}); only files the user sent "
            "in this chat can be uploaded"
        )
    return path


async def read_text(engine: BrowserEngine, session: BrowserSession, args: Args) -> str:
    """The visible text of the page, or of the element `ref` names."""
    if args.get("ref"):
        tab, locator = resolve_ref(engine, session, str(args["ref"]))
    else:
        tab = current_tab(session)
        locator = tab.page.locator("body")
    await guard_readable(tab)
    text = (await locator.inner_text()).strip() or "(no visible text)"
    wrapped = wrap_untrusted(cap(text, READ_LIMIT), tab.page.url)
    return f"Text of {tab.id} {tab.page.url}:\n{wrapped}"


async def screenshot(engine: BrowserEngine, session: BrowserSession, args: Args) -> ToolResult:
    """A PNG of the viewport (or the whole page), delivered to the user as an image."""
    tab = current_tab(session)
    await guard_readable(tab)
    shot = session.files / f"{tab.id}-{engine.new_snapshot_number()}.png"
    full = bool(args.get("full_page"))
    await tab.page.screenshot(path=str(shot), full_page=full, type="png")
    if shot.stat().st_size > MAX_SCREENSHOT_BYTES:
        shot = shot.with_suffix(".jpg")
        await tab.page.screenshot(path=str(shot), full_page=full, type="jpeg", quality=70)
    mime = "image/png" if shot.suffix == ".png" else "image/jpeg"
    caption = f"{tab.page.url}"
    text = (
        f"Screenshot of {tab.id} ({tab.page.url}) sent to the user as an image. Act on the page "
        "with refs from a snapshot, not with positions from the picture."
    )
    return ToolResult(text, attachments=(Attachment(str(shot), "image", mime, caption),))


ACTIONS: dict[str, Action] = {
    "navigate": navigate,
    "back": back,
    "snapshot": snapshot,
    "find": find,
    "click": click,
    "type": type_text,
    "select": select,
    "press": press,
    "scroll": scroll,
    "wait": wait,
    "read_text": read_text,
    "upload": upload,
    "screenshot": screenshot,
}

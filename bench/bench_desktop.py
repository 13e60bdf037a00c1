"""computer_use figures on a private 1280×800 Xvfb with a busy window on it, baselines in the run.

Screenshot: the mss grab alone, and the tool's capture (grab + PNG file), against Pillow's PNG
encoder, `xwd -root` (the X11 dump every X install has), `scrot` and ImageMagick's
`import -window root` (`make bench` installs those two; measured only when present).
Input: `xdotool mousemove X Y click 1` as the tool runs it, against the `mousemove --sync` form
(the research's 108 ms figure) and a whole tool `click` (input, screenshot, cursor query;
settle delay 0).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from larkbot.config import LiveSettings, parse_settings
from larkbot.storage.db import Database
from tools.builtin.computer_use import ComputerUseTool
from tools.desktop.screen import capture, open_screen
from tools.desktop.xinput import X11Display, xdotool
from tools.desktop.xvfb import Xvfb
from tools.runtime import ToolRuntime

RUNS = 20
BUSY_WINDOW = """
import random, tkinter as tk
root = tk.Tk(); root.geometry("1280x800+0+0")
c = tk.Canvas(root, width=1280, height=800, bg="white", highlightthickness=0); c.pack()
rnd = random.Random(7)
for i in range(400):
    x, y = rnd.randrange(1200), rnd.randrange(760)
    c.create_rectangle(x, y, x + rnd.randrange(8, 120), y + rnd.randrange(8, 60),
                       fill="#%06x" % rnd.randrange(1 << 24))
    c.create_text(rnd.randrange(1280), rnd.randrange(800), text="larkbot %d" % i)
root.mainloop()
"""


async def _median_ms(step: Callable[[], Awaitable[object]], runs: int = RUNS) -> float:
    await step()  # warm-up
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        await step()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


async def _run(argv: list[str], display: X11Display) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv, env=display.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    await proc.wait()


def _grab(display: X11Display) -> None:
    with open_screen(display) as grabber:
        grabber.grab(grabber.monitors[0])


def _pillow_capture(display: X11Display, folder: Path) -> None:
    from PIL import Image

    with open_screen(display) as grabber:
        shot = grabber.grab(grabber.monitors[0])
    image = Image.frombytes("RGB", shot.size, shot.bgra, "raw", "BGRX")
    image.save(folder / "pil.png", "PNG", compress_level=3)


async def _figures(display: X11Display, folder: Path) -> None:
    shot = folder / "shot.png"
    grab = await _median_ms(lambda: asyncio.to_thread(_grab, display))
    tool_shot = await _median_ms(lambda: asyncio.to_thread(capture, display, shot))
    print(f"screenshot 1280×800: mss grab {grab:.1f} ms; grab + PNG file {tool_shot:.1f} ms "
          f"({shot.stat().st_size // 1024} KB)")  # fmt: skip
    pillow = await _median_ms(lambda: asyncio.to_thread(_pillow_capture, display, folder))
    kb = (folder / "pil.png").stat().st_size // 1024
    print(f"  baseline grab + Pillow PNG (adaptive filters, level 3): {pillow:.1f} ms "
          f"({kb} KB) -> {pillow / tool_shot:.1f}x")  # fmt: skip
    baselines = {
        "xwd -root": ["xwd", "-root", "-silent", "-out", str(folder / "shot.xwd")],
        "scrot": ["scrot", "-o", str(folder / "scrot.png")],
        "import -window root": ["import", "-window", "root", str(folder / "import.png")],
    }
    for name, argv in baselines.items():
        if shutil.which(argv[0]) is None:
            print(f"  baseline {name}: not installed, skipped")
            continue
        ms = await _median_ms(lambda argv=argv: _run(argv, display))  # type: ignore[misc]
        print(f"  baseline {name}: {ms:.1f} ms -> mss grab {ms / grab:.1f}x faster, "
              f"tool capture {ms / tool_shot:.1f}x")  # fmt: skip
    click = await _median_ms(lambda: xdotool(display, "mousemove", "700", "500", "click", "1"))
    spots = iter(["640", "660"] * RUNS)  # --sync waits for a motion: never the same spot twice
    synced = await _median_ms(
        lambda: xdotool(display, "mousemove", "--sync", next(spots), "400", "click", "1"), 10
    )
    print(f"click: xdotool {click:.1f} ms; baseline mousemove --sync + click {synced:.1f} ms "
          f"-> {synced / click:.1f}x faster")  # fmt: skip
    await _tool_click(display, folder)


async def _tool_click(display: X11Display, folder: Path) -> None:
    raw = {"computer_use": {"enabled": True, "display": display.name, "settle_seconds": 0}}
    settings = parse_settings(raw)
    db = Database(f"sqlite:///{folder}/bench.db")
    async with httpx.AsyncClient() as http:
        tool = ComputerUseTool(ToolRuntime("web", LiveSettings(settings), http, db))
        whole = await _median_ms(lambda: tool.run(action="click", x=600, y=300))
        typed = await _median_ms(lambda: tool.run(action="type", text="你好"), 10)
        await tool.aclose()
    await db.close()
    print(f"tool click (input + screenshot + cursor, settle 0): {whole:.1f} ms; "
          f"tool type '你好' via clipboard: {typed:.1f} ms")  # fmt: skip


async def _bench() -> None:
    with tempfile.TemporaryDirectory() as home:
        previous = os.environ.get("LARKBOT_HOME")
        os.environ["LARKBOT_HOME"] = home  # never touch the user's real home
        xvfb = Xvfb("1280x800")
        display = await xvfb.start()
        window = subprocess.Popen([sys.executable, "-c", BUSY_WINDOW], env=display.env())
        try:
            await asyncio.sleep(1.0)  # let the window draw (a benchmark, not a test)
            await _figures(display, Path(home))
        finally:
            window.terminate()
            window.wait(5)
            await xvfb.stop()
            if previous is None:
                os.environ.pop("LARKBOT_HOME", None)
            else:
                os.environ["LARKBOT_HOME"] = previous


def main() -> None:
    """Print the figures."""
    asyncio.run(_bench())

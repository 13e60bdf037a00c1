"""Fixtures' workers: a private Xvfb per test module, the Tk app per test, colour finding."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image, ImageChops

from tools.desktop.xinput import X11Display

APP = Path(__file__).with_name("tk_app.py")
WAIT = 10.0  # every wait on the app is bounded by this


class TkApp:
    """The Tk window as a child process; `wait_for(pred)` reads its state lines (bounded)."""

    def __init__(self, display: X11Display) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(APP)],
            env=display.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.state: dict[str, Any] = {}
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_for(lambda s: s.get("ready"))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def wait_for(self, predicate: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
        """The first state satisfying `predicate`; AssertionError with the last state after 10 s."""
        deadline = time.monotonic() + WAIT
        while not predicate(self.state):
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                err = self.proc.stderr.read() if self.proc.poll() is not None else ""  # type: ignore[union-attr]
                raise AssertionError(f"app state never matched; last {self.state} {err}")
            try:
                self.state = self.lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
        return self.state

    def close(self) -> None:
        """Stop the window."""
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def find_colour(png: str, rgb: tuple[int, int, int]) -> tuple[int, int] | None:
    """The centre of the bounding box of the pixels of exactly `rgb` in a screenshot, or None."""
    with Image.open(png) as img:
        bands = img.convert("RGB").split()
    masks = [
        band.point(lambda v, c=c: 255 if v == c else 0) for band, c in zip(bands, rgb, strict=True)
    ]
    mask = ImageChops.multiply(ImageChops.multiply(masks[0], masks[1]), masks[2])
    box = mask.getbbox()
    if box is None:
        return None
    return (box[0] + box[2]) // 2, (box[1] + box[3]) // 2

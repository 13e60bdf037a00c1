"""Screenshots with mss (a ctypes X client, ~10 ms a grab), scaled for the model with Pillow.

Blocking (X round trips, PNG encoding): call these in a thread.
"""

from __future__ import annotations

import os
from pathlib import Path

from tools.desktop.geometry import Geometry
from tools.desktop.xinput import DesktopError, X11Display

# PNG with unfiltered rows and zlib level 3 (mss.tools): on screen content (flat colour, text)
# 2.5× faster than Pillow's adaptive-filter encoder and ~15% smaller (`make bench`)
PNG_LEVEL = 3


def open_screen(display: X11Display):  # type: ignore[no-untyped-def]
    """An mss grabber on the display (use it as a context manager), or DesktopError."""
    import mss

    if display.xauthority:  # Xlib reads the cookie file from the environment
        os.environ["XAUTHORITY"] = display.xauthority
    try:
        return mss.MSS(display=display.name)
    except Exception as err:  # mss raises its own X errors; all mean "cannot use this display"
        raise DesktopError(
            f"cannot open X display {display.name} ({err}); start Xvfb there, set "
            "computer_use.display, or set computer_use.start_xvfb: true"
        ) from None


def screen_geometry(display: X11Display) -> Geometry:
    """The display's size and how it is shown to the model."""
    with open_screen(display) as grabber:
        monitor = grabber.monitors[0]  # the whole screen (all monitors)
    return Geometry.for_screen(int(monitor["width"]), int(monitor["height"]))


def capture(display: X11Display, path: Path) -> Geometry:
    """Grab the whole screen, scale it to at most 1280×800, write it to `path` as PNG."""
    import mss.tools
    from PIL import Image

    with open_screen(display) as grabber:
        shot = grabber.grab(grabber.monitors[0])
    geometry = Geometry.for_screen(shot.width, shot.height)
    image = Image.frombytes("RGB", shot.size, shot.bgra, "raw", "BGRX")
    if geometry.scaled:
        size = (geometry.model_width, geometry.model_height)
        image = image.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)
    tmp = path.with_suffix(".tmp")
    mss.tools.to_png(image.tobytes(), image.size, level=PNG_LEVEL, output=tmp)
    tmp.replace(path)  # a reader never sees half a file
    return geometry

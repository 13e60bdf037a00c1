"""Where the pointer is, asked over libX11 directly (XQueryPointer): < 1 ms, where spawning
`xdotool getmouselocation` costs ~100 ms. Blocking: call it in a thread.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from functools import cache

from tools.desktop.xinput import DesktopError, X11Display


@cache
def _libx11() -> ctypes.CDLL:
    name = ctypes.util.find_library("X11")
    if name is None:
        raise DesktopError("libX11 is missing (apt-get install libx11-6)")
    lib = ctypes.CDLL(name)
    lib.XOpenDisplay.argtypes = [ctypes.c_char_p]
    lib.XOpenDisplay.restype = ctypes.c_void_p
    lib.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    lib.XDefaultRootWindow.restype = ctypes.c_ulong
    ulong, c_int = ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int)
    c_uint = ctypes.POINTER(ctypes.c_uint)
    lib.XQueryPointer.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ulong, ulong]
    lib.XQueryPointer.argtypes += [c_int, c_int, c_int, c_int, c_uint]
    lib.XQueryPointer.restype = ctypes.c_int
    lib.XCloseDisplay.argtypes = [ctypes.c_void_p]
    return lib


def pointer_position(display: X11Display) -> tuple[int, int]:
    """The pointer's position on the screen of `display`."""
    lib = _libx11()
    if display.xauthority:  # Xlib reads the cookie file from the environment
        os.environ["XAUTHORITY"] = display.xauthority
    dpy = lib.XOpenDisplay(display.name.encode())
    if not dpy:
        raise DesktopError(f"cannot open X display {display.name}")
    try:
        root_ret, child = ctypes.c_ulong(), ctypes.c_ulong()
        x, y, wx, wy, mask = (ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int(),
                              ctypes.c_uint())  # fmt: skip
        refs = [ctypes.byref(v) for v in (root_ret, child, x, y, wx, wy, mask)]
        lib.XQueryPointer(dpy, lib.XDefaultRootWindow(dpy), *refs)
        return x.value, y.value
    finally:
        lib.XCloseDisplay(dpy)

"""Images people send, checked and downscaled with Pillow before the model sees them.

Longest side ≤ MAX_SIDE px. Bombs are refused from the header, before any pixel is decoded:
at most MAX_PIXELS (Pillow's own guard is set to it and its warning is an error) and at most
MAX_DECODED_BYTES once decoded (JPEG decodes at a reduced scale; PNG & co. decode whole).
The server runs this in `larkbot.lark.media.isolated`'s memory-capped child, so this module imports
nothing heavy.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any

MAX_SIDE = 2048
MAX_PIXELS = 60_000_000  # e.g. 10,000 × 6,000
MAX_DECODED_BYTES = 160 * 1024 * 1024


class MediaError(Exception):
    """A resource could not be fetched or read; the message says why, for the model."""


def prepare_image(raw: bytes, dest: Path) -> Path:
    """Check and downscale an image (≤ MAX_SIDE px), saved next to `dest`; returns the file.

    Blocking (Pillow): the server runs it in `larkbot.lark.media.isolated`. MediaError says why not.
    """
    from PIL import Image, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS  # Pillow's default (89 Mpx) is not ours to rely on
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            return _downscale(Image.open(io.BytesIO(raw)), dest)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
        raise MediaError(f"the image is too large to open (over {MAX_PIXELS:,} px)") from err
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as err:
        raise MediaError("the image is corrupt or not an image format I can read") from err


def _downscale(img: Any, dest: Path) -> Path:
    with img:
        if img.width * img.height > MAX_PIXELS:
            raise MediaError(f"the image is too large to open ({img.width}×{img.height} px)")
        img.draft("RGB", (MAX_SIDE, MAX_SIDE))  # JPEG: decode at a reduced scale, much faster
        if img.width * img.height * len(img.getbands()) > MAX_DECODED_BYTES:
            raise MediaError(f"the image is too large to open ({img.width}×{img.height} px)")
        img.load()
        alpha = "A" in img.mode or (img.mode == "P" and "transparency" in img.info)
        img.thumbnail((MAX_SIDE, MAX_SIDE))
        if alpha:
            out = dest.with_suffix(".png")
            img.convert("RGBA").save(out, "PNG", optimize=True)
        else:
            out = dest.with_suffix(".jpg")
            img.convert("RGB").save(out, "JPEG", quality=85)
    return out

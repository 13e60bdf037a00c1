"""A look at an Office file's zip directory before any library parses it (zip bombs).

docx, xlsx and pptx are zip containers. python-docx and python-pptx load every part into
memory and parse each XML part into a tree (several times, up to ~30×, its size); openpyxl
loads the shared strings whole. A 600 KB file can unpack to gigabytes, so the directory's
declared sizes are checked first. They are trustworthy upper bounds: Python's zipfile never
inflates an entry past its declared size (a lie ends in a CRC error instead).

The limits, chosen for documents people send (downloads are at most 30 MB):
- at most MAX_PARTS entries;
- no part over 1 MB that unpacks to more than MAX_RATIO times its packed size (XML packs
  5-30×; text repeated for a bomb packs 1000×);
- at most MAX_WHOLE bytes, unpacked, in the parts a library holds in memory at once;
- xlsx worksheets are read as a stream (openpyxl read-only), so they only count towards
  MAX_STREAMED, a bound on the time spent unpacking.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

MAX_PARTS = 5_000
MAX_RATIO = 100
RATIO_FROM = 1024 * 1024  # smaller parts may pack as well as they like
MAX_WHOLE = 50 * 1024 * 1024
MAX_STREAMED = 512 * 1024 * 1024
_STREAMED = re.compile(r"^xl/worksheets/[^/]+\.xml$")


class TooBig(Exception):
    """The container unpacks to more than is read; the message says what, for the sender."""


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):,.1f} MB"


def check_container(path: Path) -> None:
    """Raise TooBig when the zip container at `path` is beyond the limits above.

    A file that is not a zip at all passes: the library's own error then says it is corrupt.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, OSError):
        return
    if len(parts) > MAX_PARTS:
        raise TooBig(f"it holds {len(parts):,} parts (at most {MAX_PARTS:,} are read)")
    whole = streamed = 0
    for part in parts:
        size = part.file_size
        if size > RATIO_FROM and size > MAX_RATIO * max(part.compress_size, 1):
            ratio = size // max(part.compress_size, 1)
            raise TooBig(
                f"its part {part.filename} unpacks to {_mb(size)}, {ratio:,}× its packed "
                f"size (a zip bomb; parts may unpack to at most {MAX_RATIO}×)"
            )
        if _STREAMED.match(part.filename):
            streamed += size
        else:
            whole += size
    if whole > MAX_WHOLE:
        raise TooBig(f"it unpacks to {_mb(whole)} (documents are read up to {_mb(MAX_WHOLE)})")
    if streamed > MAX_STREAMED:
        raise TooBig(
            f"its sheets unpack to {_mb(streamed)} (sheets are read up to {_mb(MAX_STREAMED)})"
        )

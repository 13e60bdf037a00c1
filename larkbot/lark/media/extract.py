"""Text of the documents users send: txt/md/csv/json/…, pdf, docx, xlsx, pptx, html.

Pure Python, well-kept extractors: pypdf, python-docx, openpyxl, python-pptx; trafilatura
(already used by web_fetch) for HTML. Every extractor stops once it has `limit` characters;
an Office file's zip directory is checked first (`zipcheck`), a PDF is read up to
MAX_PDF_PAGES pages. Blocking and memory-hungry: files from people are read through
`larkbot.lark.media.isolated` (a child process with a memory cap, killed on timeout).

Why not markitdown: measured on bench_media's documents (markitdown 0.1.9, same machine and
run), it took 5-40x longer per document (docx 9.3 s vs 0.25 s, xlsx 11.7 s vs 0.73 s, pdf
3.4 s vs 0.21 s under load), 12.9 s to import (pandas, magika/onnxruntime) vs 0.08 s, and
417 MB installed, for comparable text (its markdown tables make xlsx 45% longer).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from larkbot.lark.media.zipcheck import TooBig, check_container

TEXT_SUFFIXES = frozenset(
    [
        ".txt",
        ".md",
        ".markdown",
        ".csv",
        ".tsv",
        ".json",
        ".jsonl",
        ".log",
        ".yaml",
        ".yml",
        ".toml",
        ".ini",
        ".xml",
        ".py",
        ".js",
        ".ts",
        ".go",
        ".rs",
        ".java",
        ".c",
        ".h",
        ".cpp",
        ".sh",
        ".sql",
        ".rst",
    ]
)
MAX_PDF_PAGES = 300
ZIPPED = frozenset([".docx", ".xlsx", ".xlsm", ".pptx"])


class ExtractError(Exception):
    """The document could not be read (corrupt, encrypted, …); the message says why."""


def _take(pieces: Iterator[str], limit: int, seconds: float | None) -> str:
    out: list[str] = []
    size = 0
    deadline = None if seconds is None else time.monotonic() + seconds
    for piece in pieces:
        if not piece:
            continue
        out.append(piece)
        size += len(piece) + 1
        if size > limit:
            break
        if deadline is not None and time.monotonic() > deadline:
            out.append(f"[… reading stopped after {seconds:g} s: the rest was not read]")
            break
    return "\n".join(out)


def _plain(path: Path, limit: int) -> Iterator[str]:
    with path.open("rb") as fh:
        raw = fh.read(limit * 4)
    text = raw.decode("utf-8", "replace")
    if path.suffix.lower() == ".json" and len(raw) < limit:
        with contextlib.suppress(ValueError):  # pretty JSON reads better than one long line
            text = json.dumps(json.loads(text), ensure_ascii=False, indent=1)
    yield text


def _pdf(path: Path, limit: int) -> Iterator[str]:
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    if reader.is_encrypted:
        raise ExtractError("the PDF is encrypted")
    pages = reader.pages
    for i, page in enumerate(pages):
        if i >= MAX_PDF_PAGES:
            yield f"[… only the first {MAX_PDF_PAGES} of its {len(pages):,} pages were read]"
            break
        yield page.extract_text() or ""


def _docx(path: Path, limit: int) -> Iterator[str]:
    import docx

    document = docx.Document(str(path))
    for para in document.paragraphs:
        yield para.text
    for table in document.tables:
        for row in table.rows:
            yield " | ".join(cell.text.strip() for cell in row.cells)


def _xlsx(path: Path, limit: int) -> Iterator[str]:
    import openpyxl

    book = openpyxl.load_workbook(str(path), read_only=True, data_only=True)
    try:
        for sheet in book.worksheets:
            yield f"## {sheet.title}"
            for row in sheet.iter_rows(values_only=True):
                if any(v is not None for v in row):
                    yield "\t".join("" if v is None else str(v) for v in row)
    finally:
        book.close()


def _pptx(path: Path, limit: int) -> Iterator[str]:
    from pptx import Presentation

    for n, slide in enumerate(Presentation(str(path)).slides, 1):
        yield f"## Slide {n}"
        for shape in slide.shapes:
            if getattr(shape, "has_text_frame", False):
                yield shape.text_frame.text


def _html(path: Path, limit: int) -> Iterator[str]:
    import trafilatura

    html = path.read_bytes()[: limit * 8].decode("utf-8", "replace")
    yield trafilatura.extract(html, include_tables=True) or ""


EXTRACTORS: dict[str, Callable[[Path, int], Iterator[str]]] = {
    ".pdf": _pdf,
    ".docx": _docx,
    ".xlsx": _xlsx,
    ".xlsm": _xlsx,
    ".pptx": _pptx,
    ".html": _html,
    ".htm": _html,
}


def is_plain_text(name: str) -> bool:
    """Whether the file is text already (file_read reads it as it is)."""
    return Path(name).suffix.lower() in TEXT_SUFFIXES


def can_extract(name: str) -> bool:
    """Whether the file's type is one whose text we read."""
    suffix = Path(name).suffix.lower()
    return suffix in TEXT_SUFFIXES or suffix in EXTRACTORS


def extract_text(path: Path, limit: int, seconds: float | None = None) -> str:
    """Up to about `limit` characters of the document's text; ExtractError when unreadable.

    With `seconds`, reading stops (with a marker) once that much time has gone by.
    """
    suffix = path.suffix.lower()
    extractor = EXTRACTORS.get(suffix, _plain if suffix in TEXT_SUFFIXES else None)
    if extractor is None:
        raise ExtractError(f"{suffix or 'this'} files are not read")
    try:
        if suffix in ZIPPED:
            check_container(path)
        return _take(extractor(path, limit), limit, seconds).strip()
    except ExtractError:
        raise
    except TooBig as err:
        raise ExtractError(f"the file is too big to read: {err}") from err
    except Exception as err:  # each library has its own errors for a corrupt file
        raise ExtractError(f"the file could not be read ({type(err).__name__})") from err

"""Media figures: text extraction of the documents users send, and image preparation.

Each figure is a ratio against a baseline measured in the same run: extraction against merely
reading the file's bytes; downscaling (≤ 2048 px, re-encoded) against decoding the image alone.
Also printed: characters extracted, and what the prepared image costs the model in base64.
"""

from __future__ import annotations

import io
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import docx
import openpyxl
from PIL import Image
from pptx import Presentation

from larkbot.lark.media.extract import extract_text
from larkbot.lark.media.media_in import prepare_image

LIMIT = 20_000


def _best(fn: Callable[[], object], n: int = 5) -> float:
    """Median seconds of `n` runs after one warm-up."""
    fn()
    times = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _pdf(pages: list[str]) -> bytes:
    """A PDF with one line of Helvetica text per page."""
    n = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode(),
    ]
    for i, text in enumerate(pages):
        stream = f"BT /F1 11 Tf 40 750 Td ({text}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {3 + 2 * n} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out, offsets = b"%PDF-1.4\n", []
    for i, obj in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


def _documents(folder: Path) -> dict[str, Path]:
    para = "The quarterly review covers revenue, hiring and the launch plan in detail. "
    (folder / "report.pdf").write_bytes(_pdf([f"Page {i}: {para}" for i in range(50)]))
    document = docx.Document()
    for i in range(400):
        document.add_paragraph(f"{i}. {para}")
    document.save(folder / "minutes.docx")
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for i in range(2000):
        sheet.append([i, f"item {i}", i * 1.5, "note"])
    book.save(folder / "sheet.xlsx")
    deck = Presentation()
    for i in range(30):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide {i}"  # type: ignore[union-attr]
        slide.placeholders[1].text = para  # type: ignore[attr-defined]
    deck.save(folder / "deck.pptx")
    (folder / "page.html").write_text(
        "<html><body><article>"
        + "".join(f"<p>Paragraph {i}: {para}</p>" for i in range(200))
        + "</article></body></html>"
    )
    (folder / "notes.md").write_text(("# Notes\n\n" + para + "\n") * 200)
    return {p.suffix: p for p in folder.iterdir()}


def _extraction(folder: Path) -> None:
    print("extraction (first 20,000 characters), median of 5, vs reading the bytes:")
    for suffix, path in sorted(_documents(folder).items()):
        read = _best(path.read_bytes)
        took = _best(lambda p=path: extract_text(p, LIMIT))  # type: ignore[misc]
        chars = len(extract_text(path, LIMIT))
        size = path.stat().st_size
        print(
            f"  {suffix:6} {size / 1024:7.1f} KB → {chars:6,} chars in {took * 1000:7.2f} ms"
            f"  ({took / read:,.0f}× the read)"
        )


def _images(folder: Path) -> None:
    print("image preparation (4000×3000 photo-like JPEG), vs decoding it alone:")
    gradient = Image.linear_gradient("L").resize((4000, 3000))
    noise = Image.effect_noise((4000, 3000), 12)
    img = Image.merge("RGB", (gradient, Image.blend(gradient, noise, 0.3), noise))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=90)
    raw = buf.getvalue()

    def decode() -> None:
        with Image.open(io.BytesIO(raw)) as im:
            im.load()

    dest = folder / "photo"
    took, base = _best(lambda: prepare_image(raw, dest), 3), _best(decode, 3)
    out = prepare_image(raw, dest)
    with Image.open(out) as prepared:
        size = prepared.size
    b64 = (out.stat().st_size + 2) // 3 * 4
    print(
        f"  {len(raw) / 1024:.0f} KB → {size[0]}×{size[1]}, {out.stat().st_size / 1024:.0f} KB "
        f"({b64 / 1024:.0f} KB base64) in {took * 1000:.0f} ms ({took / base:.1f}× the decode)"
    )


def main() -> None:
    """Print the media figures."""
    with tempfile.TemporaryDirectory() as tmp:
        _extraction(Path(tmp))
        _images(Path(tmp))


if __name__ == "__main__":
    main()

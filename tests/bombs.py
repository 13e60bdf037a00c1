"""Hostile files made on the spot: zip-bomb Office files, a pixel-bomb PNG, a 5,000-page PDF.

Each is written piece by piece (streamed into the zip or the deflate stream), so making a
200 MB bomb costs the test process a few MB, not 200.
"""

from __future__ import annotations

import io
import os
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import docx
from pptx import Presentation
from pptx.util import Inches

MARKER = "BOMB_MARKER"
MB = 1024 * 1024


def _inflate(
    template: bytes, part: str, around: tuple[str, str], pieces: Iterator[bytes], out: Path
) -> Path:
    """Copy the zip `template` to `out`, `part` growing at MARKER by everything in `pieces`.

    `around` closes the marker's element and reopens one, so the XML stays well formed.
    """
    close, reopen = around
    with zipfile.ZipFile(io.BytesIO(template)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename != part:
                dst.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
                continue
            head, tail = data.decode().split(MARKER, 1)
            with dst.open(_deflated(zipfile.ZipInfo(part)), "w", force_zip64=True) as fh:
                fh.write(f"{head}{MARKER}{close}".encode())
                for piece in pieces:
                    fh.write(piece)
                fh.write(f"{reopen}end{tail}".encode())
    return out


def _repeat(unit: bytes, total: int) -> Iterator[bytes]:
    chunk = unit * (MB // len(unit))
    for _ in range(total // len(chunk)):
        yield chunk


def _deflated(info: zipfile.ZipInfo) -> zipfile.ZipInfo:
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _docx_template() -> bytes:
    document = docx.Document()
    document.add_paragraph(MARKER)
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


DOCX_AROUND = ("</w:t></w:r></w:p>", "<w:p><w:r><w:t>")


def docx_bomb(out: Path, unpacked: int = 200 * MB) -> Path:
    """A docx whose document.xml unpacks to `unpacked` bytes of one-letter paragraphs."""
    unit = b"<w:p><w:r><w:t>a</w:t></w:r></w:p>"
    return _inflate(
        _docx_template(), "word/document.xml", DOCX_AROUND, _repeat(unit, unpacked), out
    )


def docx_dense(out: Path, unpacked: int = 40 * MB) -> Path:
    """A docx within every zip limit (random text packs ~4×) that parses into a huge tree."""

    def pieces() -> Iterator[bytes]:
        for _ in range(unpacked // MB):
            words = os.urandom(MB // 42 * 4).hex()
            yield "".join(
                f"<w:p><w:r><w:t>{words[i : i + 8]}</w:t></w:r></w:p>"
                for i in range(0, len(words), 8)
            ).encode()

    return _inflate(_docx_template(), "word/document.xml", DOCX_AROUND, pieces(), out)


def pptx_bomb(out: Path, unpacked: int = 200 * MB) -> Path:
    """A pptx whose one slide holds `unpacked` bytes of one-letter paragraphs."""
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    slide.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = MARKER
    buf = io.BytesIO()
    deck.save(buf)
    unit = b"<a:p><a:r><a:t>a</a:t></a:r></a:p>"
    around = ("</a:t></a:r></a:p>", "<a:p><a:r><a:t>")
    return _inflate(buf.getvalue(), "ppt/slides/slide1.xml", around, _repeat(unit, unpacked), out)


XLSX_PARTS = {
    "[Content_Types].xml": '<?xml version="1.0"?><Types xmlns="{ct}">'
    '<Default Extension="rels" ContentType="{pkg}.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" ContentType="{sml}.sheet.main+xml"/>'
    '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{sml}.worksheet+xml"/>'
    '<Override PartName="/xl/sharedStrings.xml" ContentType="{sml}.sharedStrings+xml"/>'
    "</Types>",
    "_rels/.rels": '<?xml version="1.0"?><Relationships xmlns="{rel}">'
    '<Relationship Id="rId1" Type="{odr}/officeDocument" Target="xl/workbook.xml"/>'
    "</Relationships>",
    "xl/workbook.xml": '<?xml version="1.0"?><workbook xmlns="{main}" xmlns:r="{odr}">'
    '<sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>',
    "xl/_rels/workbook.xml.rels": '<?xml version="1.0"?><Relationships xmlns="{rel}">'
    '<Relationship Id="rId1" Type="{odr}/worksheet" Target="worksheets/sheet1.xml"/>'
    '<Relationship Id="rId2" Type="{odr}/sharedStrings" Target="sharedStrings.xml"/>'
    "</Relationships>",
    "xl/worksheets/sheet1.xml": '<?xml version="1.0"?><worksheet xmlns="{main}"><sheetData>'
    '<row r="1"><c r="A1" t="s"><v>0</v></c></row></sheetData></worksheet>',
    "xl/sharedStrings.xml": '<?xml version="1.0"?><sst xmlns="{main}">'
    f"<si><t>{MARKER}</t></si></sst>",
}
NAMESPACES = {
    "ct": "http://schemas.openxmlformats.org/package/2006/content-types",
    "rel": "http://schemas.openxmlformats.org/package/2006/relationships",
    "odr": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "main": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
    "sml": "application/vnd.openxmlformats-officedocument.spreadsheetml",
    "pkg": "application/vnd.openxmlformats-package",
}


def xlsx_bomb(out: Path, unpacked: int = 200 * MB) -> Path:
    """An xlsx whose shared strings unpack to `unpacked` bytes (openpyxl loads them whole)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as book:
        for name, text in XLSX_PARTS.items():
            book.writestr(name, text.format(**NAMESPACES))
    unit = b"<si><t>a</t></si>"
    return _inflate(
        buf.getvalue(),
        "xl/sharedStrings.xml",
        ("</t></si>", "<si><t>"),
        _repeat(unit, unpacked),
        out,
    )


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = struct.pack(">I", zlib.crc32(kind + data))
    return struct.pack(">I", len(data)) + kind + data + crc


def png_bomb(out: Path, side: int = 30_000) -> Path:
    """A `side`×`side` grey PNG of zeros: 900 Mpx, under a megabyte packed."""
    ihdr = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    pack = zlib.compressobj(1)  # fast; still ~230× (level 9: ~1000×)
    row = b"\0" * (side + 1)  # filter byte and the row's pixels
    rows = row * max(1, MB // len(row))
    idat = b"".join(pack.compress(rows) for _ in range(side // (len(rows) // len(row))))
    idat += pack.flush()
    signature = b"\x89PNG\r\n\x1a\n"
    body = _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")
    out.write_bytes(signature + body)
    return out


def pdf_pages(out: Path, pages: int = 5_000) -> Path:
    """A PDF of `pages` pages, each saying `page N`."""
    count = 3 + 2 * pages
    kids = " ".join(f"{4 + 2 * n} 0 R" for n in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for n in range(pages):
        stream = f"BT /F1 18 Tf 72 720 Td (page {n + 1}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {5 + 2 * n} 0 R "
            "/Resources << /Font << /F1 3 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    body, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, obj in enumerate(objects, 1):
        offsets.append(len(body))
        body += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(body)
    body += b"xref\n0 %d\n0000000000 65535 f \n" % (count + 1)
    body += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    body += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (count + 1, xref)
    out.write_bytes(bytes(body))
    return out

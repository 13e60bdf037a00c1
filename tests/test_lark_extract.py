"""Document text extraction and image preparation on real files made here."""

from __future__ import annotations

import io
from pathlib import Path

import openpyxl
import pytest
from PIL import Image
from pptx import Presentation

from larkbot.lark.media.extract import ExtractError, can_extract, extract_text
from larkbot.lark.media.media_in import MediaError, prepare_image, safe_name


def test_xlsx_pptx_html_and_json(tmp_path: Path) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Budget"
    sheet.append(["item", "cost"])
    sheet.append(["laptop", 1200])
    book.save(tmp_path / "b.xlsx")
    assert extract_text(tmp_path / "b.xlsx", 1000) == "## Budget\nitem\tcost\nlaptop\t1200"
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Roadmap"  # type: ignore[union-attr]
    deck.save(tmp_path / "d.pptx")
    assert "## Slide 1\nRoadmap" in extract_text(tmp_path / "d.pptx", 1000)
    page = "<html><body><article><p>Alpha beta gamma delta epsilon.</p></article></body></html>"
    (tmp_path / "p.html").write_text(page)
    assert "Alpha beta gamma" in extract_text(tmp_path / "p.html", 1000)
    (tmp_path / "c.json").write_text('{"a":[1,2]}')
    assert extract_text(tmp_path / "c.json", 1000) == '{\n "a": [\n  1,\n  2\n ]\n}'


def test_limits_and_bad_files(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("line\n" * 100_000)
    assert len(extract_text(tmp_path / "long.txt", 1000)) < 5000
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 not a zip really")
    with pytest.raises(ExtractError, match="could not be read"):
        extract_text(tmp_path / "broken.docx", 1000)
    assert not can_extract("movie.mkv") and can_extract("REPORT.PDF")
    with pytest.raises(ExtractError, match="not read"):
        extract_text(tmp_path / "long.exe", 10)


def test_images_are_downscaled_and_keep_transparency(tmp_path: Path) -> None:
    buf = io.BytesIO()
    Image.new("RGBA", (4096, 1024), (0, 0, 0, 0)).save(buf, "PNG")
    out = prepare_image(buf.getvalue(), tmp_path / "shot")
    with Image.open(out) as img:
        assert (out.suffix, img.size, img.mode) == (".png", (2048, 512), "RGBA")
    with pytest.raises(MediaError, match="corrupt"):
        prepare_image(b"GIF89a broken", tmp_path / "bad")


def test_safe_names_stay_in_their_folder() -> None:
    assert safe_name("../../etc/passwd", "k") == "passwd"
    assert safe_name("..\\..\\boot.ini", "k") == "boot.ini"
    assert safe_name("", "file_v3_x") == "file_v3_x" and safe_name("...", "k") == "k"
    assert safe_name("季度报告 (final).pdf", "k") == "季度报告 (final).pdf"


def test_a_pixel_bomb_is_refused_before_decoding(tmp_path: Path) -> None:
    import struct
    import zlib

    ihdr = struct.pack(">IIBBBBB", 10_000, 10_000, 8, 2, 0, 0, 0)  # 100 Mpx, header only

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    idat = zlib.compress(b"\0" * 100)  # a token of pixel data: open() stops at IDAT
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    with pytest.raises(MediaError, match="too large to open"):
        prepare_image(png, tmp_path / "bomb")

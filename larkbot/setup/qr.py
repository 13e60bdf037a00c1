"""QR codes of the registration link: for the terminal (text blocks) and the web page (SVG)."""

from __future__ import annotations

import io

import segno


def terminal(url: str) -> str:
    """The QR code of `url` as half-block characters (two modules a line), dark on light."""
    out = io.StringIO()
    segno.make(url, error="l").terminal(out=out, compact=True)
    return out.getvalue()


def svg(url: str) -> str:
    """The QR code of `url` as an inline SVG element (no XML declaration)."""
    out = io.BytesIO()
    segno.make(url, error="l").save(out, kind="svg", scale=4, border=4, xmldecl=False)
    return out.getvalue().decode("utf-8")

"""Sample card specs shared by the cards tests (one per kind, with CJK text and edge cases)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "golden" / "cards"

SAMPLES: dict[str, dict[str, Any]] = {
    "compare": {
        "kind": "compare",
        "title": "Phones under 4000 CNY",
        "subtitle": "2024-06",
        "columns": ["Model", "Price", "Battery"],
        "rows": [
            ["Redmi K70", 2499, "5000 mAh"],
            ["华为 nova 12", "2999", "4600 mAh"],
            ["a|b", 1.5],
        ],
        "note": "Source: JD.com",
    },
    "rank": {
        "kind": "rank",
        "title": "Python web frameworks",
        "items": [
            {"name": "Django", "value": "80k ★"},
            {"name": "FastAPI", "value": "76k ★", "note": "async"},
            {"name": "Flask", "value": "68k ★"},
            {"name": "Litestar"},
        ],
    },
    "stats": {
        "kind": "stats",
        "title": "Weekly report",
        "color": "indigo",
        "stats": [
            {"label": "Active users", "value": "12,480", "change": "+8.2%"},
            {"label": "Revenue", "value": 3.4, "unit": "M CNY", "change": "-1.1%"},
            {"label": "Tickets closed", "value": 312},
            {"label": "NPS", "value": 61},
        ],
    },
    "timeline": {
        "kind": "timeline",
        "title": "Release 2.0",
        "events": [
            {"time": "06-01", "title": "Feature freeze"},
            {"time": "06-10", "title": "Beta", "detail": "Invite-only\\n200 testers"},
            {"time": "06-20", "title": "GA"},
        ],
    },
}


def golden(name: str, value: Any) -> Any:
    """The stored golden JSON for `name`; (re)written when UPDATE_GOLDEN=1."""
    path = GOLDEN / f"{name}.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    assert path.exists(), f"missing golden {path}: run with UPDATE_GOLDEN=1 once and review it"
    return json.loads(path.read_text(encoding="utf-8"))

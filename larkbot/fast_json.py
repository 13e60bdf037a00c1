"""JSON on the webhook's path: orjson where it can, the standard library where orjson refuses.

orjson parses a Lark event and encodes the journal's copy of it several times faster than `json`
(see the README's "Dependencies"). It refuses a few inputs that `json` takes: lone surrogate
escapes (which a sender can put in a message), NaN, integers past 64 bits, nesting deeper than
1024 and non-string keys. Those go to `json`, so every input gives the result, or the error,
it gave before.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_encode = json.JSONEncoder(ensure_ascii=False).encode  # one encoder, not one per call


def loads(data: bytes | str) -> Any:
    """The value `data` encodes; raises ValueError (or RecursionError) like `json.loads`."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def dumps(value: Any) -> str:
    """`value` as compact JSON text, non-ASCII kept as is (not escaped)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # e.g. a str with a lone surrogate, or an int past 64 bits
        return _encode(value)

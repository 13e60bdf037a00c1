"""1,000+ random and malformed callbacks: the chain answers 2xx/4xx, never 5xx, never crashes."""

from __future__ import annotations

import base64
import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from larkbot.config import LarkConfig
from larkbot.lark.arrival import crypto
from larkbot.lark.arrival.webhook import verify_card_request, verify_event_request
from tests.fakes.lark_events import challenge, envelope, lark_request

NOW = 1_800_000_000.0
KEY, TOKEN = "fuzz-key", "fuzz-token"
CONFIGS = [
    LarkConfig(),
    LarkConfig(verification_token=TOKEN),
    LarkConfig(encrypt_key=KEY),
    LarkConfig(encrypt_key=KEY, verification_token=TOKEN),
]
ALLOWED = {200, 400, 401, 403, 413}
JUNK_VALUES = [None, 0, -1, 1e308, True, "", "x" * 300, [], {}, [1, {"a": None}], "\u0000\ud7ff"]


def _mutate_json(rng: random.Random, obj: object) -> object:
    """Replace a random node of a JSON document with junk or drop a key."""
    if isinstance(obj, dict) and obj:
        key = rng.choice(list(obj))
        roll = rng.random()
        if roll < 0.3:
            return {k: v for k, v in obj.items() if k != key}
        if roll < 0.6:
            return {**obj, key: rng.choice(JUNK_VALUES)}
        return {**obj, key: _mutate_json(rng, obj[key])}
    return rng.choice(JUNK_VALUES)


def _random_body(rng: random.Random) -> tuple[bytes, dict[str, str]]:
    base = rng.choice([envelope("im.message.receive_v1", {"m": 1}, token=TOKEN), challenge(TOKEN)])
    kind = rng.randrange(8)
    if kind == 0:
        return rng.randbytes(rng.randrange(0, 400)), {}
    if kind == 1:
        raw, headers = lark_request(base, encrypt_key=KEY, timestamp=NOW)
        pos = rng.randrange(len(raw))
        return raw[:pos] + bytes([rng.randrange(256)]) + raw[pos + 1 :], headers
    if kind == 2:
        raw, headers = lark_request(base, encrypt_key=KEY, timestamp=NOW)
        return raw[: rng.randrange(len(raw))], headers
    if kind == 3:
        junk = base64.b64encode(rng.randbytes(rng.choice([0, 16, 32, 33, 48]))).decode()
        raw = json.dumps({"encrypt": rng.choice([junk, junk[:-1], "!!", 7, None])}).encode()
        return raw, _junk_headers(rng)
    if kind == 4:
        return json.dumps(_mutate_json(rng, base)).encode(), _junk_headers(rng)
    if kind == 5:  # well-formed crypto around a mutated plaintext, correctly signed
        return lark_request(_mutate_json(rng, base), encrypt_key=KEY, timestamp=NOW)
    if kind == 6:  # encrypted with a key of random validity around random bytes
        enc = crypto.encrypt(rng.randbytes(rng.randrange(0, 64)), rng.choice([KEY, "other"]))
        return lark_request(json.dumps({"encrypt": enc}).encode())
    return (b"{" * rng.randrange(1, 5000)), {}


def _junk_headers(rng: random.Random) -> dict[str, str]:
    names = ["X-Lark-Request-Timestamp", "x-lark-request-nonce", "X-LARK-SIGNATURE"]
    values = ["", "abc", "-5", "1" * 40, str(int(NOW)), "\u00e9", "0" * 64]
    return {n: rng.choice(values) for n in names if rng.random() < 0.7}


def test_a_thousand_seeded_random_bodies_never_5xx() -> None:
    rng = random.Random(20261129)
    statuses: dict[int, int] = {}
    for _ in range(1000):
        raw, headers = _random_body(rng)
        lark = rng.choice(CONFIGS)
        verify = rng.choice([verify_event_request, verify_card_request])
        out = verify(raw, headers, lark, NOW)
        assert out.status in ALLOWED, (out, raw[:200])
        if out.envelope is not None and lark.encrypt_key.get_secret_value():
            # With a key, nothing reaches the pipeline without a valid, fresh signature.
            assert crypto.verify_signature(
                headers["X-Lark-Request-Timestamp"],
                headers["X-Lark-Request-Nonce"],
                KEY,
                raw,
                headers["X-Lark-Signature"],
            )
        statuses[out.status] = statuses.get(out.status, 0) + 1
    assert statuses.get(400, 0) > 100  # the generator really produced malformed input


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    raw=st.one_of(
        st.binary(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(
                    st.sampled_from(["schema", "header", "event", "encrypt", "type", "token"])
                    | st.text(max_size=5),
                    inner,
                    max_size=5,
                )
            ),
            max_leaves=20,
        ).map(lambda v: json.dumps(v).encode()),
    ),
    headers=st.dictionaries(
        st.sampled_from(["x-lark-request-timestamp", "X-Lark-Request-Nonce", "x-lark-signature"]),
        st.text(max_size=70),
    ),
    which=st.integers(0, len(CONFIGS) - 1),
)
def test_hypothesis_bodies_never_5xx(raw: bytes, headers: dict[str, str], which: int) -> None:
    for verify in (verify_event_request, verify_card_request):
        assert verify(raw, headers, CONFIGS[which], NOW).status in ALLOWED

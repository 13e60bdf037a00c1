"""People's tokens sealed at rest: AES-256-GCM with a key file under `$LARKBOT_HOME/.secrets/`.

The key is made at first use (mode 0600, directory 0700). Replicas on other hosts share the
database, so they need the same key file; a token sealed with another key does not open
(`VaultMismatch`), and its person is asked to `/auth` again rather than the bot failing.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY_FILE = "lark_oauth.key"
NONCE = 12


class VaultMismatch(Exception):
    """A sealed value did not open: another key, or tampered with."""


def _load_or_create(path: Path) -> bytes:
    """The key at `path`, made first if missing: written to a private temporary file and
    linked into place, so a replica starting at the same moment reads all 32 bytes or none."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(AESGCM.generate_key(bit_length=256))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it first: use theirs
        finally:
            tmp.unlink()
    key = path.read_bytes()
    if len(key) != 32:
        raise VaultMismatch(f"{path} is not a 32-byte key")
    return key


class Vault:
    """Seals and opens small secrets; `aad` binds each to its row (app and person)."""

    def __init__(self, secrets_dir: Path) -> None:
        self.path = secrets_dir / KEY_FILE
        self._aead: AESGCM | None = None

    def _cipher(self) -> AESGCM:
        if self._aead is None:
            self._aead = AESGCM(_load_or_create(self.path))
        return self._aead

    def seal(self, plain: bytes, aad: bytes) -> bytes:
        """nonce ‖ ciphertext ‖ tag."""
        nonce = os.urandom(NONCE)
        return nonce + self._cipher().encrypt(nonce, plain, aad)

    def open(self, sealed: bytes, aad: bytes) -> bytes:
        """The plain bytes; VaultMismatch when the key or the row differs."""
        try:
            return self._cipher().decrypt(sealed[:NONCE], sealed[NONCE:], aad)
        except (InvalidTag, ValueError):
            raise VaultMismatch("sealed with another key") from None

"""Lark event crypto: AES-256-CBC payload decryption and the X-Lark-Signature digest.

AES-256-CBC with PKCS#7 padding, the key the SHA-256 of the console's Encrypt Key, the IV the
first 16 bytes of the base64 value, as Lark documents it; `cryptography` runs the cipher.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from collections.abc import Callable

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

_BLOCK = 16

# A hashlib constructor: sha256 for events and v2 cards, sha1 for v1 card callbacks.
Digest = Callable[[bytes], "hashlib._Hash"]


class DecryptError(ValueError):
    """The `encrypt` field is not valid base64, not a whole number of blocks, or badly padded."""


def aes_key(encrypt_key: str) -> bytes:
    """The 32-byte AES key Lark derives from the console's Encrypt Key: SHA-256 of its UTF-8."""
    return hashlib.sha256(encrypt_key.encode("utf-8")).digest()


def _cipher(encrypt_key: str, iv: bytes) -> Cipher[modes.CBC]:
    return Cipher(algorithms.AES(aes_key(encrypt_key)), modes.CBC(iv))


def decrypt(encrypted: str, encrypt_key: str) -> bytes:
    """Decrypt a Lark `encrypt` value: base64(iv || AES-256-CBC(PKCS#7(plaintext)))."""
    try:
        raw = base64.b64decode(encrypted, validate=True)
    except (binascii.Error, ValueError) as err:
        raise DecryptError("encrypt is not valid base64") from err
    if len(raw) < 2 * _BLOCK or len(raw) % _BLOCK:
        raise DecryptError("encrypt has an invalid length")
    decryptor = _cipher(encrypt_key, raw[:_BLOCK]).decryptor()
    padded = decryptor.update(raw[_BLOCK:]) + decryptor.finalize()
    unpadder = padding.PKCS7(8 * _BLOCK).unpadder()
    try:  # a wrong key almost always shows up here as bad padding
        return unpadder.update(padded) + unpadder.finalize()
    except ValueError as err:
        raise DecryptError("bad padding (wrong encrypt key?)") from err


def encrypt(plaintext: bytes | str, encrypt_key: str, iv: bytes | None = None) -> str:
    """Encrypt like Lark does (used by tests and tools that build events); random IV by default."""
    data = plaintext.encode("utf-8") if isinstance(plaintext, str) else plaintext
    iv = iv if iv is not None else os.urandom(_BLOCK)
    padder = padding.PKCS7(8 * _BLOCK).padder()
    encryptor = _cipher(encrypt_key, iv).encryptor()
    padded = padder.update(data) + padder.finalize()
    return base64.b64encode(iv + encryptor.update(padded) + encryptor.finalize()).decode("ascii")


def signature(
    timestamp: str, nonce: str, key: str, body: bytes, digest: Digest = hashlib.sha256
) -> str:
    """X-Lark-Signature: lowercase hex digest (SHA-256 unless told) of timestamp + nonce + key +
    raw body; the key is the Encrypt Key, or the verification token for v1 card callbacks."""
    hashed = digest((timestamp + nonce + key).encode("utf-8"))
    hashed.update(body)  # not `+ body`: that copies the body once more
    return hashed.hexdigest()


def verify_signature(
    timestamp: str, nonce: str, key: str, body: bytes, given: str, digest: Digest = hashlib.sha256
) -> bool:
    """Constant-time check of a request's X-Lark-Signature."""
    expected = signature(timestamp, nonce, key, body, digest)
    return hmac.compare_digest(expected.encode("ascii"), given.strip().lower().encode("utf-8"))


def tokens_equal(expected: str, given: object) -> bool:
    """Constant-time verification-token comparison; anything but a non-empty string fails."""
    if not isinstance(given, str) or not given or not expected:
        return False
    return hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8"))

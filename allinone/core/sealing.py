"""Sealing secrets at rest with AES-256-GCM (the `cryptography` package).

A sealed value is `version (1 byte) || nonce (12 bytes) || ciphertext+tag`. Every value
is bound to a context string (for example `vault_credentials:<id>:<project>`) used as
associated data, so a sealed value copied onto another row does not open there.
The key comes from `<data-dir>/secrets/vault.key` (see `allinone.credentials`); this
module never logs or returns a key or a plaintext except to its caller. The cipher (and
with it `cryptography`'s native library) is loaded at the first seal or open, not when
the server starts.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import msgspec

from allinone.core.errors import CoreError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

VERSION = b"\x01"
NONCE_BYTES = 12
KEY_BYTES = 32


class SealError(CoreError):
    """A sealed value cannot be opened: wrong key, wrong context or damaged bytes."""


class Sealer:
    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError("a sealing key is 32 bytes")
        self._key = key
        self._cipher: AESGCM | None = None

    def _aead(self) -> AESGCM:
        if self._cipher is None:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            self._cipher = AESGCM(self._key)
        return self._cipher

    def seal(self, plaintext: bytes, context: str) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return VERSION + nonce + self._aead().encrypt(nonce, plaintext, context.encode())

    def open(self, sealed: bytes, context: str) -> bytes:
        if len(sealed) < 1 + NONCE_BYTES + 16 or sealed[:1] != VERSION:
            raise SealError("unrecognised sealed value")
        nonce = sealed[1 : 1 + NONCE_BYTES]
        aead = self._aead()
        from cryptography.exceptions import InvalidTag

        try:
            return aead.decrypt(nonce, sealed[1 + NONCE_BYTES :], context.encode())
        except InvalidTag as exc:
            raise SealError("sealed value does not open with this key and context") from exc

    def seal_json(self, value: Any, context: str) -> bytes:
        return self.seal(msgspec.json.encode(value), context)

    def open_json(self, sealed: bytes, context: str) -> Any:
        return msgspec.json.decode(self.open(sealed, context))

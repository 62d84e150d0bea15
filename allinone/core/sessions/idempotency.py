"""Request digests and the replay rule: the same key with the same request is answered
with the earlier result; the same key with another request is a conflict."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from allinone.core.errors import IdempotencyConflict

_encoder = msgspec.json.Encoder(order="sorted")


def digest(value: Any) -> str:
    """A stable digest of a request body (keys sorted)."""
    return hashlib.sha256(_encoder.encode(msgspec.to_builtins(value))).hexdigest()


def check_session_replay(earlier: dict[str, Any], request_hash: str) -> str:
    """The session an earlier creation under the same key made, or the conflict."""
    if earlier["request_hash"] != request_hash or earlier["deleted_at"]:
        raise IdempotencyConflict("This idempotency key was used with a different request.")
    return str(earlier["id"])


def check_batch_replay(earlier_hash: str, batch_hash: str) -> None:
    """Raise unless an earlier batch under the same key had the same content."""
    if earlier_hash != batch_hash:
        raise IdempotencyConflict("This idempotency key was used with different input.")

"""Stop-and-wait transfers (`runtime_prepare`, `workspace_write`): the shared rules.

    begin -> ready(offset 0) -> [chunk(offset=o, data) -> received(offset=o+len)]*
          -> commit -> completed(offset 0, size_bytes=N)

Any step may instead end `rejected` (a finite code; nothing was applied) or `unknown`
(`*_unconfirmed`, an invalid receipt, a deadline or a lost connection: the effect is
unknown and nothing is replayed); `runtime_prepare` may also end `failed`. One step is
outstanding at a time and one transfer is allowed per connection. A `received` receipt
confirms staged bytes, not installation; `completed` confirms the commit only.

The lifecycle that applies these rules step by step is in `transfer_lifecycle.py`.
"""

from __future__ import annotations

from enum import StrEnum

from runtime.proto.errors import (
    DecodeErrorCode,
    RuntimePrepareErrorCode,
    ValidationError,
    WriteErrorCode,
)
from runtime.proto.limits import MAX_CHUNK_BYTES, MAX_TRANSFER_BYTES, SHA256_HEX_LENGTH

INVALID_REQUEST = "invalid_request"
_HEX = frozenset("0123456789abcdef")


class TransferKind(StrEnum):
    RUNTIME_PREPARE = "runtime_prepare"
    WORKSPACE_WRITE = "workspace_write"


class TransferStep(StrEnum):
    BEGIN = "begin"
    CHUNK = "chunk"
    COMMIT = "commit"


class TransferOutcome(StrEnum):
    READY = "ready"
    RECEIVED = "received"
    COMPLETED = "completed"
    REJECTED = "rejected"
    FAILED = "failed"  # runtime_prepare only
    UNKNOWN = "unknown"


REJECTED_CODES: dict[TransferKind, frozenset[str]] = {
    TransferKind.RUNTIME_PREPARE: frozenset(
        {
            RuntimePrepareErrorCode.INVALID_REQUEST,
            RuntimePrepareErrorCode.RESOURCE_UNAVAILABLE,
            RuntimePrepareErrorCode.RUNTIME_PREPARATION_CAPACITY,
            RuntimePrepareErrorCode.RUNTIME_PREPARATION_UNSUPPORTED,
            RuntimePrepareErrorCode.RUNTIME_PREPARATION_REJECTED,
        }
    ),
    TransferKind.WORKSPACE_WRITE: frozenset(
        {
            WriteErrorCode.INVALID_REQUEST,
            WriteErrorCode.RESOURCE_UNAVAILABLE,
            WriteErrorCode.WRITE_CAPACITY,
            WriteErrorCode.WRITE_UNSUPPORTED,
            WriteErrorCode.WRITE_REJECTED,
        }
    ),
}
FAILED_CODES: dict[TransferKind, str] = {
    TransferKind.RUNTIME_PREPARE: RuntimePrepareErrorCode.RUNTIME_PREPARATION_FAILED,
}
UNCONFIRMED_CODES: dict[TransferKind, str] = {
    TransferKind.RUNTIME_PREPARE: RuntimePrepareErrorCode.RUNTIME_PREPARATION_UNCONFIRMED,
    TransferKind.WORKSPACE_WRITE: WriteErrorCode.WRITE_UNCONFIRMED,
}


def is_sha256_hex(value: str) -> bool:
    """True for exactly 64 lowercase hexadecimal characters."""
    return len(value) == SHA256_HEX_LENGTH and _HEX.issuperset(value)


def validate_transfer_size(size_bytes: int, *, allow_empty: bool = True) -> None:
    """Accept a declared body size of 0 (only if `allow_empty`) or 1 byte up to 50 MiB."""
    if size_bytes < (0 if allow_empty else 1) or size_bytes > MAX_TRANSFER_BYTES:
        raise ValidationError(INVALID_REQUEST, "transfer size is out of range")


def validate_chunk_frame(offset: int, length: int) -> None:
    """Rules one chunk frame meets on its own: offset 0..50 MiB, 1..64 KiB of data that
    stays within the 50 MiB transfer limit."""
    if not (0 <= offset <= MAX_TRANSFER_BYTES and 0 < length <= MAX_CHUNK_BYTES):
        raise ValidationError(INVALID_REQUEST, "chunk offset or size is out of range")
    if length > MAX_TRANSFER_BYTES - offset:
        raise ValidationError(INVALID_REQUEST, "chunk exceeds the transfer limit")


def validate_chunk(offset: int, length: int, *, received: int, size_bytes: int) -> None:
    """A chunk must start at the bytes received so far and fit the remaining declared size."""
    validate_chunk_frame(offset, length)
    if offset != received or length > size_bytes - received:
        raise ValidationError(INVALID_REQUEST, "chunk does not continue the transfer")


def terminal_receipt_codes(kind: TransferKind, outcome: str) -> frozenset[str] | None:
    """The finite codes a terminal receipt of `outcome` may carry; None if not terminal."""
    if outcome == TransferOutcome.REJECTED:
        return REJECTED_CODES[kind]
    if outcome == TransferOutcome.FAILED:
        code = FAILED_CODES.get(kind)
        return frozenset() if code is None else frozenset({code})
    if outcome == TransferOutcome.UNKNOWN:
        return frozenset({UNCONFIRMED_CODES[kind]})
    return None


def check_receipt(
    kind: TransferKind,
    outcome: TransferOutcome,
    offset: int,
    size_bytes: int,
    error_code: str,
    *,
    expected: TransferOutcome,
    expected_offset: int,
    expected_size: int,
) -> None:
    """Accept only the receipt the current step expects, or a terminal with a finite code.

    Terminal receipts carry offset 0 and size 0. The success receipt carries exactly
    `expected_offset`, no code, and `size_bytes == expected_size` only on `completed`.
    Raises ValidationError(`invalid_receipt`) otherwise: such a reply proves nothing.
    """
    terminal_codes = terminal_receipt_codes(kind, outcome)
    if terminal_codes is not None:
        valid = offset == 0 and size_bytes == 0 and error_code in terminal_codes
    else:
        valid = (
            outcome == expected
            and offset == expected_offset
            and not error_code
            and size_bytes == (expected_size if expected is TransferOutcome.COMPLETED else 0)
        )
    if not valid:
        raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "transfer receipt is invalid")

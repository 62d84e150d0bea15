"""Shared transfer rules: sizes, chunks, digests and receipts at their boundaries."""

import pytest

from runtime.proto.errors import DecodeErrorCode, ValidationError
from runtime.proto.limits import MAX_CHUNK_BYTES, MAX_TRANSFER_BYTES
from runtime.proto.transfers import (
    TransferKind,
    TransferOutcome,
    check_receipt,
    is_sha256_hex,
    validate_chunk,
    validate_chunk_frame,
    validate_transfer_size,
)

RUNTIME = TransferKind.RUNTIME_PREPARE
WRITE = TransferKind.WORKSPACE_WRITE


def test_transfer_sizes_are_limited_to_50_mib() -> None:
    validate_transfer_size(0)
    validate_transfer_size(MAX_TRANSFER_BYTES)
    for size, allow_empty in [(-1, True), (MAX_TRANSFER_BYTES + 1, True), (0, False)]:
        with pytest.raises(ValidationError) as caught:
            validate_transfer_size(size, allow_empty=allow_empty)
        assert caught.value.code == "invalid_request"


@pytest.mark.parametrize(
    ("offset", "length", "valid"),
    [
        (0, 1, True),
        (0, MAX_CHUNK_BYTES, True),
        (0, MAX_CHUNK_BYTES + 1, False),
        (0, 0, False),
        (-1, 1, False),
        (MAX_TRANSFER_BYTES - MAX_CHUNK_BYTES, MAX_CHUNK_BYTES, True),
        (MAX_TRANSFER_BYTES - 1, 2, False),
        (MAX_TRANSFER_BYTES, 1, False),
    ],
)
def test_chunk_frames_carry_1_to_64_kib_within_50_mib(
    offset: int, length: int, valid: bool
) -> None:
    if valid:
        validate_chunk_frame(offset, length)
    else:
        with pytest.raises(ValidationError):
            validate_chunk_frame(offset, length)


@pytest.mark.parametrize(
    ("offset", "length", "received", "size", "valid"),
    [
        (0, 10, 0, 10, True),
        (10, 5, 10, 15, True),
        (5, 5, 10, 15, False),
        (15, 5, 10, 20, False),
        (10, 6, 10, 15, False),
    ],
)
def test_a_chunk_continues_at_the_received_offset_within_the_declared_size(
    offset: int, length: int, received: int, size: int, valid: bool
) -> None:
    if valid:
        validate_chunk(offset, length, received=received, size_bytes=size)
    else:
        with pytest.raises(ValidationError):
            validate_chunk(offset, length, received=received, size_bytes=size)


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("a" * 64, True),
        ("0123456789abcdef" * 4, True),
        ("A" * 64, False),
        ("a" * 63, False),
        ("a" * 65, False),
        ("g" * 64, False),
        ("", False),
    ],
)
def test_sha256_is_64_lowercase_hex_digits(value: str, valid: bool) -> None:
    assert is_sha256_hex(value) is valid


def _check(
    kind: TransferKind,
    outcome: str,
    offset: int = 0,
    size: int = 0,
    code: str = "",
    expected: TransferOutcome = TransferOutcome.RECEIVED,
) -> None:
    check_receipt(
        kind,
        TransferOutcome(outcome),
        offset,
        size,
        code,
        expected=expected,
        expected_offset=8 if expected is TransferOutcome.RECEIVED else 0,
        expected_size=8,
    )


@pytest.mark.parametrize(
    ("kind", "outcome", "offset", "size", "code", "expected"),
    [
        (WRITE, "ready", 0, 0, "", TransferOutcome.READY),
        (WRITE, "received", 8, 0, "", TransferOutcome.RECEIVED),
        (WRITE, "completed", 0, 8, "", TransferOutcome.COMPLETED),
        (WRITE, "rejected", 0, 0, "write_capacity", TransferOutcome.READY),
        (WRITE, "unknown", 0, 0, "write_unconfirmed", TransferOutcome.COMPLETED),
        (RUNTIME, "failed", 0, 0, "runtime_preparation_failed", TransferOutcome.COMPLETED),
        (RUNTIME, "rejected", 0, 0, "runtime_preparation_rejected", TransferOutcome.RECEIVED),
        (RUNTIME, "unknown", 0, 0, "runtime_preparation_unconfirmed", TransferOutcome.READY),
    ],
)
def test_valid_receipts(
    kind: TransferKind, outcome: str, offset: int, size: int, code: str, expected: TransferOutcome
) -> None:
    _check(kind, outcome, offset, size, code, expected)


@pytest.mark.parametrize(
    ("kind", "outcome", "offset", "size", "code", "expected"),
    [
        (WRITE, "completed", 0, 8, "", TransferOutcome.READY),  # premature
        (WRITE, "ready", 0, 8, "", TransferOutcome.READY),
        (WRITE, "ready", 1, 0, "", TransferOutcome.READY),
        (WRITE, "received", 7, 0, "", TransferOutcome.RECEIVED),
        (WRITE, "completed", 0, 7, "", TransferOutcome.COMPLETED),
        (WRITE, "completed", 8, 8, "", TransferOutcome.COMPLETED),
        (WRITE, "received", 8, 0, "write_capacity", TransferOutcome.RECEIVED),
        (WRITE, "rejected", 0, 0, "private-detail", TransferOutcome.READY),
        (WRITE, "rejected", 0, 0, "write_unconfirmed", TransferOutcome.READY),
        (WRITE, "unknown", 0, 8, "write_unconfirmed", TransferOutcome.READY),
        (WRITE, "failed", 0, 0, "runtime_preparation_failed", TransferOutcome.READY),
        (RUNTIME, "rejected", 0, 0, "write_rejected", TransferOutcome.READY),
        (RUNTIME, "failed", 0, 0, "runtime_preparation_unconfirmed", TransferOutcome.READY),
    ],
)
def test_premature_or_contradictory_receipts_prove_nothing(
    kind: TransferKind, outcome: str, offset: int, size: int, code: str, expected: TransferOutcome
) -> None:
    with pytest.raises(ValidationError) as caught:
        _check(kind, outcome, offset, size, code, expected)
    assert caught.value.code == DecodeErrorCode.INVALID_RECEIPT

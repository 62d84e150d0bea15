"""`workspace_write` requests per step, and write receipts with their reasons."""

import msgspec
import pytest

from runtime.proto.errors import DecodeErrorCode, ValidationError, WriteRejectReason
from runtime.proto.limits import MAX_CHUNK_BYTES, MAX_TRANSFER_BYTES
from runtime.proto.transfers import TransferOutcome, TransferStep
from runtime.proto.writes import WorkspaceWrite, WorkspaceWriteResult

ENV = "0b7c3f52-5a57-4c35-9a53-3a3b8f6e2c11"
SESSION = "7d1e2a40-8c1b-4f0e-b7c2-52e3a4f1d9aa"
BEGIN = WorkspaceWrite(TransferStep.BEGIN, ENV, SESSION, "docs/a.txt", 3, "a" * 64)


def _begin(**changes: object) -> WorkspaceWrite:
    return msgspec.structs.replace(BEGIN, **changes)


@pytest.mark.parametrize(
    "request_",
    [
        BEGIN,
        _begin(size_bytes=0),
        _begin(size_bytes=MAX_TRANSFER_BYTES),
        WorkspaceWrite(TransferStep.CHUNK, offset=0, data=b"x"),
        WorkspaceWrite(TransferStep.CHUNK, offset=MAX_CHUNK_BYTES, data=b"x" * MAX_CHUNK_BYTES),
        WorkspaceWrite(TransferStep.COMMIT),
    ],
)
def test_valid_write_steps(request_: WorkspaceWrite) -> None:
    request_.validate()


@pytest.mark.parametrize(
    "request_",
    [
        _begin(environment_id="env"),
        _begin(session_id=SESSION.upper()),
        _begin(path="/abs"),
        _begin(path="a/../b"),
        _begin(path=""),
        _begin(sha256="A" * 64),
        _begin(size_bytes=MAX_TRANSFER_BYTES + 1),
        _begin(size_bytes=-1),
        _begin(offset=1),
        _begin(data=b"x"),
        WorkspaceWrite(TransferStep.CHUNK, offset=0, data=b""),
        WorkspaceWrite(TransferStep.CHUNK, offset=0, data=b"x" * (MAX_CHUNK_BYTES + 1)),
        WorkspaceWrite(TransferStep.CHUNK, path="a", data=b"x"),
        WorkspaceWrite(TransferStep.COMMIT, offset=3),
        WorkspaceWrite(TransferStep.COMMIT, data=b"x"),
        WorkspaceWrite(TransferStep.COMMIT, sha256="a" * 64),
    ],
)
def test_invalid_write_steps(request_: WorkspaceWrite) -> None:
    with pytest.raises(ValidationError) as caught:
        request_.validate()
    assert caught.value.code == "invalid_request"


@pytest.mark.parametrize("reason", ["", "destination_directory", "unsafe_destination", "future"])
def test_a_reason_refines_only_a_write_rejection(reason: str) -> None:
    result = WorkspaceWriteResult(
        TransferOutcome.REJECTED, error_code="write_rejected", reason=reason
    )
    result.check(TransferOutcome.COMPLETED, 0, 4)
    assert result.reject_reason() == (
        WriteRejectReason(reason) if reason in set(WriteRejectReason) else None
    )


@pytest.mark.parametrize(
    "result",
    [
        WorkspaceWriteResult(TransferOutcome.COMPLETED, size_bytes=4, reason="unsafe_destination"),
        WorkspaceWriteResult(
            TransferOutcome.REJECTED, error_code="invalid_request", reason="unsafe_destination"
        ),
        WorkspaceWriteResult(
            TransferOutcome.UNKNOWN, error_code="write_unconfirmed", reason="destination_directory"
        ),
    ],
)
def test_a_misplaced_reason_proves_nothing(result: WorkspaceWriteResult) -> None:
    with pytest.raises(ValidationError) as caught:
        result.check(TransferOutcome.COMPLETED, 0, 4)
    assert caught.value.code == DecodeErrorCode.INVALID_RECEIPT

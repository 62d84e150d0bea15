"""The transfer lifecycle: both ends step by step, and every illegal move refused."""

import hashlib

import pytest

from runtime.proto.errors import DecodeErrorCode, LifecycleErrorCode, ValidationError
from runtime.proto.initialization import RuntimePrepareResult
from runtime.proto.limits import MAX_CHUNK_BYTES
from runtime.proto.transfer_lifecycle import (
    TERMINAL_TRANSFER_STATES,
    TRANSFER_TRANSITIONS,
    IllegalTransferTransition,
    TransferReceiver,
    TransferSender,
    TransferState,
    check_transfer_transition,
)
from runtime.proto.transfers import TransferKind, TransferOutcome
from runtime.proto.writes import WorkspaceWriteResult

WRITE = TransferKind.WORKSPACE_WRITE
BODY = b"x" * (MAX_CHUNK_BYTES + 10)
DIGEST = hashlib.sha256(BODY).hexdigest()


def _result(outcome: str, offset: int = 0, size: int = 0, code: str = "") -> WorkspaceWriteResult:
    return WorkspaceWriteResult(TransferOutcome(outcome), offset, size, code)


def test_the_table_covers_every_state_and_terminal_states_end() -> None:
    assert set(TRANSFER_TRANSITIONS) == set(TransferState)
    for state in TERMINAL_TRANSFER_STATES:
        assert TRANSFER_TRANSITIONS[state] == frozenset()
    for state in set(TransferState) - TERMINAL_TRANSFER_STATES - {TransferState.NEW}:
        assert TransferState.UNKNOWN in TRANSFER_TRANSITIONS[state]


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (TransferState.NEW, TransferState.COMMITTING),
        (TransferState.BEGINNING, TransferState.RECEIVING),
        (TransferState.RECEIVING, TransferState.COMMITTING),
        (TransferState.READY, TransferState.COMPLETED),
        (TransferState.COMPLETED, TransferState.UNKNOWN),
        (TransferState.UNKNOWN, TransferState.READY),
    ],
)
def test_illegal_transitions_raise_a_dedicated_error(
    current: TransferState, target: TransferState
) -> None:
    with pytest.raises(IllegalTransferTransition) as caught:
        check_transfer_transition(current, target)
    assert caught.value.code == LifecycleErrorCode.INVALID_TRANSITION
    assert (caught.value.current, caught.value.target) == (current, target)


def test_a_sender_walks_begin_chunks_and_commit() -> None:
    sender = TransferSender(WRITE, len(BODY))
    sender.begin()
    assert sender.expected() == (TransferOutcome.READY, 0)
    assert sender.receive(_result("ready")) is TransferState.READY
    assert sender.chunk(MAX_CHUNK_BYTES) == 0
    assert sender.expected() == (TransferOutcome.RECEIVED, MAX_CHUNK_BYTES)
    assert sender.receive(_result("received", MAX_CHUNK_BYTES)) is TransferState.READY
    assert sender.chunk(10) == MAX_CHUNK_BYTES
    sender.receive(_result("received", len(BODY)))
    sender.commit()
    assert sender.receive(_result("completed", 0, len(BODY))) is TransferState.COMPLETED
    assert sender.terminal and sender.offset == len(BODY)


def test_an_empty_body_goes_straight_from_ready_to_commit() -> None:
    sender = TransferSender(TransferKind.RUNTIME_PREPARE, 0)
    sender.begin()
    sender.receive(RuntimePrepareResult(TransferOutcome.READY))
    sender.commit()
    failed = RuntimePrepareResult(
        TransferOutcome.FAILED, exit_code=2, error_code="runtime_preparation_failed"
    )
    assert sender.receive(failed) is TransferState.FAILED
    assert sender.error_code == "runtime_preparation_failed"


def test_a_sender_refuses_steps_out_of_order() -> None:
    sender = TransferSender(WRITE, 4)
    with pytest.raises(IllegalTransferTransition):
        sender.chunk(4)
    sender.begin()
    with pytest.raises(IllegalTransferTransition):
        sender.commit()
    with pytest.raises(IllegalTransferTransition):
        sender.begin()
    sender.receive(_result("ready"))
    with pytest.raises(ValidationError):
        sender.commit()  # bytes are missing
    with pytest.raises(ValidationError):
        sender.chunk(5)  # beyond the declared size
    sender.chunk(4)
    with pytest.raises(IllegalTransferTransition):
        sender.chunk(1)  # one chunk outstanding at a time
    assert sender.state is TransferState.RECEIVING


def test_an_invalid_receipt_makes_the_transfer_unknown() -> None:
    sender = TransferSender(WRITE, 4)
    sender.begin()
    with pytest.raises(ValidationError) as caught:
        sender.receive(_result("completed", 0, 4))
    assert caught.value.code == DecodeErrorCode.INVALID_RECEIPT
    assert sender.state is TransferState.UNKNOWN
    with pytest.raises(IllegalTransferTransition):
        sender.receive(_result("ready"))


def test_a_rejection_or_loss_ends_the_transfer() -> None:
    rejected = TransferSender(WRITE, 4)
    rejected.begin()
    assert rejected.receive(_result("rejected", code="write_capacity")) is TransferState.REJECTED
    assert rejected.error_code == "write_capacity"
    lost = TransferSender(WRITE, 4)
    lost.begin()
    lost.receive(_result("ready"))
    lost.chunk(4)
    lost.lose()
    assert lost.state is TransferState.UNKNOWN
    with pytest.raises(IllegalTransferTransition):
        lost.lose()


def test_a_sender_refuses_an_oversized_transfer() -> None:
    with pytest.raises(ValidationError):
        TransferSender(WRITE, 50 * 1024 * 1024 + 1)


def test_a_receiver_stages_chunks_then_commits_and_settles() -> None:
    receiver = TransferReceiver(WRITE, len(BODY), DIGEST)
    assert receiver.begin() == 0
    receiver.chunk(0, BODY[:MAX_CHUNK_BYTES])
    assert receiver.state is TransferState.RECEIVING
    assert receiver.staged() == MAX_CHUNK_BYTES
    receiver.chunk(MAX_CHUNK_BYTES, BODY[MAX_CHUNK_BYTES:])
    assert receiver.staged() == len(BODY)
    receiver.commit()
    receiver.settle(TransferOutcome.COMPLETED)
    assert receiver.state is TransferState.COMPLETED


def test_a_bodiless_preparation_commits_without_a_digest() -> None:
    receiver = TransferReceiver(TransferKind.RUNTIME_PREPARE, 0, "")
    receiver.begin()
    receiver.commit()
    receiver.settle(TransferOutcome.FAILED)
    assert receiver.state is TransferState.FAILED


@pytest.mark.parametrize(
    ("offset", "data"),
    [(1, BODY[:10]), (0, b""), (0, BODY[: MAX_CHUNK_BYTES + 1]), (0, BODY + b"x")],
)
def test_a_bad_chunk_rejects_the_transfer_unapplied(offset: int, data: bytes) -> None:
    receiver = TransferReceiver(WRITE, len(BODY), DIGEST)
    receiver.begin()
    with pytest.raises(ValidationError) as caught:
        receiver.chunk(offset, data)
    assert caught.value.code == "invalid_request"
    assert receiver.state is TransferState.REJECTED


@pytest.mark.parametrize(
    ("size", "digest"),
    [(20, hashlib.sha256(b"x" * 10).hexdigest()), (10, "0" * 64)],
    ids=["incomplete", "digest-mismatch"],
)
def test_an_incomplete_or_mismatched_commit_is_rejected(size: int, digest: str) -> None:
    receiver = TransferReceiver(WRITE, size, digest)
    receiver.begin()
    receiver.chunk(0, b"x" * 10)
    receiver.staged()
    with pytest.raises(ValidationError):
        receiver.commit()
    assert receiver.state is TransferState.REJECTED


@pytest.mark.parametrize(("size", "digest"), [(4, "A" * 64), (4, ""), (-1, "a" * 64)])
def test_a_receiver_rejects_an_invalid_declaration(size: int, digest: str) -> None:
    receiver = TransferReceiver(WRITE, size, digest)
    with pytest.raises(ValidationError):
        receiver.begin()
    assert receiver.state is TransferState.REJECTED


def test_a_receiver_refuses_steps_out_of_order() -> None:
    receiver = TransferReceiver(WRITE, 4, hashlib.sha256(b"abcd").hexdigest())
    with pytest.raises(IllegalTransferTransition):
        receiver.chunk(0, b"abcd")
    receiver.begin()
    with pytest.raises(IllegalTransferTransition):
        receiver.begin()
    with pytest.raises(IllegalTransferTransition):
        receiver.settle(TransferOutcome.COMPLETED)
    receiver.chunk(0, b"abcd")
    with pytest.raises(IllegalTransferTransition):
        receiver.commit()  # the chunk is not staged yet
    receiver.staged()
    receiver.commit()
    with pytest.raises(IllegalTransferTransition):
        receiver.settle(TransferOutcome.FAILED)  # writes never fail, they are unknown
    receiver.settle(TransferOutcome.UNKNOWN)
    with pytest.raises(IllegalTransferTransition):
        receiver.reject()

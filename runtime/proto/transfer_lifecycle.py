"""The transfer lifecycle, in one place, and the two sans-I/O ends that follow it.

    NEW -> BEGINNING -> READY <-> RECEIVING          (sender: begin, chunk/received*)
    NEW -> READY | REJECTED                          (receiver: a validated begin)
    READY -> COMMITTING -> COMPLETED
    any non-terminal -> REJECTED | FAILED | UNKNOWN

`TransferSender` (Core) says which offset to send next and accepts only the exact
receipt the outstanding step expects. `TransferReceiver` (the Runtime) checks each
chunk against the bytes staged so far and the commit against the declared size and
SHA-256; it never stages bytes itself. Both raise IllegalTransferTransition when called
out of order. Neither does I/O or reads a clock: deadlines belong to the caller, which
reports them with `lose()` (sender) or `reject()` (receiver).
"""

from __future__ import annotations

import hashlib
import hmac
from enum import StrEnum
from typing import NoReturn, Protocol

from runtime.proto.errors import LifecycleErrorCode, ValidationError
from runtime.proto.transfers import (
    INVALID_REQUEST,
    TransferKind,
    TransferOutcome,
    is_sha256_hex,
    validate_chunk,
    validate_transfer_size,
)


class TransferState(StrEnum):
    NEW = "new"
    BEGINNING = "beginning"  # begin sent, awaiting `ready`
    READY = "ready"  # the next chunk or the commit may be sent
    RECEIVING = "receiving"  # one chunk outstanding, awaiting `received`
    COMMITTING = "committing"  # commit sent or being applied, awaiting `completed`
    COMPLETED = "completed"
    REJECTED = "rejected"
    FAILED = "failed"
    UNKNOWN = "unknown"


_ENDINGS = frozenset({TransferState.REJECTED, TransferState.FAILED, TransferState.UNKNOWN})
TERMINAL_TRANSFER_STATES = frozenset({TransferState.COMPLETED, *_ENDINGS})

TRANSFER_TRANSITIONS: dict[TransferState, frozenset[TransferState]] = {
    TransferState.NEW: frozenset(
        {TransferState.BEGINNING, TransferState.READY, TransferState.REJECTED}
    ),
    TransferState.BEGINNING: frozenset({TransferState.READY, *_ENDINGS}),
    TransferState.READY: frozenset({TransferState.RECEIVING, TransferState.COMMITTING, *_ENDINGS}),
    TransferState.RECEIVING: frozenset({TransferState.READY, *_ENDINGS}),
    TransferState.COMMITTING: frozenset({TransferState.COMPLETED, *_ENDINGS}),
    TransferState.COMPLETED: frozenset(),
    TransferState.REJECTED: frozenset(),
    TransferState.FAILED: frozenset(),
    TransferState.UNKNOWN: frozenset(),
}

_STATE_OF_OUTCOME = {
    TransferOutcome.READY: TransferState.READY,
    TransferOutcome.RECEIVED: TransferState.READY,
    TransferOutcome.COMPLETED: TransferState.COMPLETED,
    TransferOutcome.REJECTED: TransferState.REJECTED,
    TransferOutcome.FAILED: TransferState.FAILED,
    TransferOutcome.UNKNOWN: TransferState.UNKNOWN,
}


class IllegalTransferTransition(ValidationError):
    def __init__(self, current: TransferState, target: TransferState) -> None:
        super().__init__(
            LifecycleErrorCode.INVALID_TRANSITION, f"transfer cannot move {current} -> {target}"
        )
        self.current = current
        self.target = target


def check_transfer_transition(current: TransferState, target: TransferState) -> None:
    if target not in TRANSFER_TRANSITIONS[current]:
        raise IllegalTransferTransition(current, target)


class TransferReceipt(Protocol):
    """What the sender needs of a `runtime_prepare_result` or `workspace_write_result`."""

    @property
    def outcome(self) -> TransferOutcome: ...

    @property
    def error_code(self) -> str: ...

    def check(self, expected: TransferOutcome, offset: int, size_bytes: int) -> None: ...


class _Lifecycle:
    def __init__(self, kind: TransferKind, size_bytes: int) -> None:
        self.kind = kind
        self.size_bytes = size_bytes
        self.state = TransferState.NEW
        self.offset = 0  # bytes confirmed received (sender) or staged (receiver)
        self.error_code = ""

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_TRANSFER_STATES

    def _move(self, target: TransferState) -> None:
        check_transfer_transition(self.state, target)
        self.state = target


class TransferSender(_Lifecycle):
    """Core's end of one transfer of `size_bytes` bytes.

    Call order: `begin()`, then `receive()` the `ready` receipt; per chunk, `chunk(n)`
    returns the offset to send with the n bytes, then `receive()` the `received`
    receipt; once every byte is confirmed, `commit()` and `receive()` the `completed`
    receipt. Call `lose()` when the deadline passes or the connection is lost.
    """

    def __init__(self, kind: TransferKind, size_bytes: int) -> None:
        validate_transfer_size(size_bytes)
        super().__init__(kind, size_bytes)
        self._pending = 0

    def begin(self) -> None:
        self._move(TransferState.BEGINNING)

    def chunk(self, length: int) -> int:
        """Return the offset the next chunk of `length` bytes must carry."""
        if self.state is not TransferState.READY:
            raise IllegalTransferTransition(self.state, TransferState.RECEIVING)
        validate_chunk(self.offset, length, received=self.offset, size_bytes=self.size_bytes)
        self._move(TransferState.RECEIVING)
        self._pending = length
        return self.offset

    def commit(self) -> None:
        if self.state is TransferState.READY and self.offset != self.size_bytes:
            raise ValidationError(INVALID_REQUEST, "commit before every byte was received")
        self._move(TransferState.COMMITTING)

    def expected(self) -> tuple[TransferOutcome, int]:
        """The success outcome and offset the outstanding step's receipt must carry."""
        if self.state is TransferState.BEGINNING:
            return TransferOutcome.READY, 0
        if self.state is TransferState.RECEIVING:
            return TransferOutcome.RECEIVED, self.offset + self._pending
        if self.state is TransferState.COMMITTING:
            return TransferOutcome.COMPLETED, 0
        raise IllegalTransferTransition(self.state, self.state)

    def receive(self, receipt: TransferReceipt) -> TransferState:
        """Apply the receipt of the outstanding step and return the new state.

        An invalid receipt proves nothing: the transfer becomes UNKNOWN and the
        ValidationError (`invalid_receipt`) is re-raised for the caller to record.
        """
        outcome, offset = self.expected()
        try:
            receipt.check(outcome, offset, self.size_bytes)
        except ValidationError:
            self._move(TransferState.UNKNOWN)
            raise
        self._move(_STATE_OF_OUTCOME[receipt.outcome])
        if receipt.outcome == TransferOutcome.RECEIVED:
            self.offset, self._pending = offset, 0
        self.error_code = receipt.error_code
        return self.state

    def lose(self) -> None:
        """The deadline passed or the connection closed: the effect is unknown."""
        self._move(TransferState.UNKNOWN)


class TransferReceiver(_Lifecycle):
    """The Runtime's end of one transfer declared as `size_bytes` bytes with `sha256`.

    An empty `sha256` declares a transfer without a body (`runtime_prepare` initialize
    and finalize): it needs `size_bytes == 0` and commits without a digest check.

    Call order: `begin()` (returns the `ready` offset); per chunk, `chunk(offset, data)`
    then, once the bytes are staged, `staged()` (returns the `received` offset);
    `commit()`, then `settle()` with the native apply's outcome. A rule violation moves
    the transfer to REJECTED (nothing is applied) and raises ValidationError with code
    `invalid_request`; `reject()` ends it for a fence, an expiry or a staging failure.
    """

    def __init__(self, kind: TransferKind, size_bytes: int, sha256: str) -> None:
        super().__init__(kind, size_bytes)
        self.sha256 = sha256
        self._digest = hashlib.sha256()
        self._pending = 0

    def begin(self) -> int:
        if self.state is not TransferState.NEW:
            raise IllegalTransferTransition(self.state, TransferState.READY)
        if not (is_sha256_hex(self.sha256) or (self.sha256 == "" and self.size_bytes == 0)):
            self._fail("declared digest is invalid")
        try:
            validate_transfer_size(self.size_bytes)
        except ValidationError:
            self._move(TransferState.REJECTED)
            raise
        self._move(TransferState.READY)
        return 0

    def chunk(self, offset: int, data: bytes) -> None:
        if self.state is not TransferState.READY:
            raise IllegalTransferTransition(self.state, TransferState.RECEIVING)
        try:
            validate_chunk(offset, len(data), received=self.offset, size_bytes=self.size_bytes)
        except ValidationError:
            self._move(TransferState.REJECTED)
            raise
        self._digest.update(data)
        self._pending = len(data)
        self._move(TransferState.RECEIVING)

    def staged(self) -> int:
        """The chunk's bytes are staged; return the offset the `received` reply carries."""
        self._move(TransferState.READY)
        self.offset, self._pending = self.offset + self._pending, 0
        return self.offset

    def commit(self) -> None:
        if self.state is not TransferState.READY:
            raise IllegalTransferTransition(self.state, TransferState.COMMITTING)
        if self.offset != self.size_bytes:
            self._fail("commit before every declared byte was received")
        if self.sha256 and not hmac.compare_digest(self._digest.hexdigest(), self.sha256):
            self._fail("body does not match the declared digest")
        self._move(TransferState.COMMITTING)

    def settle(self, outcome: TransferOutcome) -> None:
        """Record the native apply: COMPLETED, FAILED (runtime_prepare) or UNKNOWN."""
        if outcome not in (TransferOutcome.COMPLETED, TransferOutcome.UNKNOWN) and not (
            outcome == TransferOutcome.FAILED and self.kind == TransferKind.RUNTIME_PREPARE
        ):
            raise IllegalTransferTransition(self.state, _STATE_OF_OUTCOME[outcome])
        if self.state is not TransferState.COMMITTING:
            raise IllegalTransferTransition(self.state, _STATE_OF_OUTCOME[outcome])
        self._move(_STATE_OF_OUTCOME[outcome])

    def reject(self) -> None:
        self._move(TransferState.REJECTED)

    def _fail(self, message: str) -> NoReturn:
        self._move(TransferState.REJECTED)
        raise ValidationError(INVALID_REQUEST, message)

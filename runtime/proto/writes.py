"""`workspace_write` (Core -> Runtime) and `workspace_write_result`: one complete,
bounded file body written into the bound workspace.

The envelope id is Core's durable mutation id (a canonical UUID), never a retry key.
`begin` declares the workspace-relative `path`, `size_bytes` (0..50 MiB) and `sha256`;
`chunk` frames carry 1..64 KiB of `data` at the exact received offset, each payload at
most 96 KiB; `commit` carries nothing. The Runtime verifies the digest before the
native writer runs and never runs the model. An exact `completed` or `rejected` receipt
releases the mutation owner; a missing or ambiguous receipt leaves the write unknown.
"""

from __future__ import annotations

import msgspec

from runtime.proto.errors import (
    DecodeErrorCode,
    ValidationError,
    WriteErrorCode,
    WriteRejectReason,
)
from runtime.proto.identities import is_canonical_uuid
from runtime.proto.paths import is_workspace_path
from runtime.proto.strictness import LENIENT, STRICT
from runtime.proto.transfers import (
    TransferKind,
    TransferOutcome,
    TransferStep,
    check_receipt,
    is_sha256_hex,
    validate_chunk_frame,
    validate_transfer_size,
)

_STRICT = STRICT
_OUT = LENIENT
INVALID = WriteErrorCode.INVALID_REQUEST


class WorkspaceWrite(msgspec.Struct, **_STRICT):
    step: TransferStep
    environment_id: str = ""
    session_id: str = ""
    path: str = ""
    size_bytes: int = 0
    sha256: str = ""
    offset: int = 0
    data: bytes = b""

    def validate(self) -> None:
        """Apply the step's rules; raises ValidationError(`invalid_request`)."""
        if self.step == TransferStep.BEGIN:
            if not (is_canonical_uuid(self.environment_id) and is_canonical_uuid(self.session_id)):
                raise ValidationError(INVALID, "begin needs canonical environment and session ids")
            if not is_workspace_path(self.path):
                raise ValidationError(INVALID, "write path is invalid")
            if not is_sha256_hex(self.sha256):
                raise ValidationError(INVALID, "sha256 must be 64 lowercase hex digits")
            validate_transfer_size(self.size_bytes)
            if self.offset or self.data:
                raise ValidationError(INVALID, "begin carries no data")
            return
        if self.environment_id or self.session_id or self.path or self.size_bytes or self.sha256:
            raise ValidationError(INVALID, "only begin carries a header")
        if self.step == TransferStep.CHUNK:
            validate_chunk_frame(self.offset, len(self.data))
        elif self.offset or self.data:
            raise ValidationError(INVALID, "commit carries no data")


class WorkspaceWriteResult(msgspec.Struct, **_OUT):
    outcome: TransferOutcome
    offset: int = 0
    size_bytes: int = 0
    error_code: str = ""
    reason: str = ""  # only with rejected/write_rejected; unknown values stay generic

    def check(self, expected: TransferOutcome, offset: int, size_bytes: int) -> None:
        """Accept the expected receipt or a finite terminal (never `failed`); `reason`
        only refines `rejected`/`write_rejected`. Raises ValidationError(`invalid_receipt`).
        """
        if self.reason and not (
            self.outcome == TransferOutcome.REJECTED
            and self.error_code == WriteErrorCode.WRITE_REJECTED
        ):
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "reason is misplaced")
        check_receipt(
            TransferKind.WORKSPACE_WRITE,
            self.outcome,
            self.offset,
            self.size_bytes,
            self.error_code,
            expected=expected,
            expected_offset=offset,
            expected_size=size_bytes,
        )

    def reject_reason(self) -> WriteRejectReason | None:
        """The known refinement of a write rejection, or None (generic rejection)."""
        try:
            return WriteRejectReason(self.reason)
        except ValueError:
            return None

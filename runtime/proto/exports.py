"""`workspace_export` (Core -> Runtime) and `workspace_export_result`: a pull-based tar
stream of the workspace outputs through a read-only preparation.

    begin(handle, environment_id) -> chunk(offset 0, data)
    next(offset = bytes received) -> chunk(offset, data) ... -> completed(offset = total)

The envelope id is the operation id (1..128 bytes) and the request payload is at most
8 KiB. Every result carries the stream position before it (`offset`); a chunk carries
1..64 KiB, the archive at most 528 MiB in all. `completed` is sent only after the
exporter finished. Core stops early with `cancel`.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from runtime.proto.errors import DecodeErrorCode, ExportErrorCode, ValidationError
from runtime.proto.identities import utf8_size
from runtime.proto.limits import MAX_CORRELATION_ID_BYTES, MAX_EXPORT_BYTES, MAX_EXPORT_CHUNK_BYTES
from runtime.proto.strictness import LENIENT, STRICT

_STRICT = STRICT
_OUT = LENIENT
INVALID = ExportErrorCode.INVALID_REQUEST


class ExportStep(StrEnum):
    BEGIN = "begin"
    NEXT = "next"
    CANCEL = "cancel"


class WorkspaceExport(msgspec.Struct, **_STRICT):
    step: ExportStep
    handle: str = ""
    environment_id: str = ""
    offset: int = 0

    def validate(self) -> None:
        """begin names the owner (1..128 bytes each); next names only the offset
        (0..528 MiB); cancel names nothing. Raises ValidationError(`invalid_request`)."""
        if self.step == ExportStep.BEGIN:
            valid = self.offset == 0 and _bounded_id(self.handle)
            valid = valid and _bounded_id(self.environment_id)
        elif self.handle or self.environment_id:
            valid = False
        elif self.step == ExportStep.NEXT:
            valid = 0 <= self.offset <= MAX_EXPORT_BYTES
        else:
            valid = self.offset == 0
        if not valid:
            raise ValidationError(INVALID, "export request is invalid")


def _bounded_id(value: str) -> bool:
    size = utf8_size(value)
    return size is not None and 0 < size <= MAX_CORRELATION_ID_BYTES


class ExportOutcome(StrEnum):
    CHUNK = "chunk"
    COMPLETED = "completed"
    FAILED = "failed"
    REJECTED = "rejected"


class WorkspaceExportResult(msgspec.Struct, **_OUT):
    outcome: ExportOutcome
    offset: int  # always emitted: the stream position before this result
    data: bytes = b""
    error_code: str = ""

    def check(self, expected_offset: int) -> None:
        """Accept a result at exactly `expected_offset`: a bounded chunk, a bare
        completion, or a finite failure code. Raises ValidationError(`invalid_receipt`)."""
        if self.offset != expected_offset:
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "export offset differs")
        if self.outcome == ExportOutcome.CHUNK:
            valid = not self.error_code and 0 < len(self.data) <= MAX_EXPORT_CHUNK_BYTES
            valid = valid and len(self.data) <= MAX_EXPORT_BYTES - self.offset
        elif self.outcome == ExportOutcome.COMPLETED:
            valid = not self.error_code and not self.data
        else:
            valid = not self.data and self.error_code in frozenset(ExportErrorCode)
        if not valid:
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "export result is invalid")

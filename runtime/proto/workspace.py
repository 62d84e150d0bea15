"""`workspace_read` (Core -> Runtime) and `workspace_read_result`: bounded byte reads and
one-level directory listings of the bound workspace.

The envelope id is the operation id (1..128 bytes; an overlong id is not echoed) and
the raw request payload is at most 8 KiB. A read targets exactly one existing owner:
a preparation `handle` or the `run_id` it was transferred to, with the exact frozen
`environment_id`; the caller never supplies a socket, credentials or a root.

Byte mode (`operation: ""`) reads 1..`max_bytes` (<= 1 MiB) of one file; directory mode
(`operation: "directory"`, `""` selects the root) lists at most `max_entries` (<= 1024)
entries. The two limits are mutually exclusive. Success needs `close_acknowledged`,
and the complete bytes or explicit truncation; a safe rejection carries no bytes, and
an interrupted or ambiguous read is `unknown` (`read_unconfirmed`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

import msgspec

from runtime.proto.errors import DecodeErrorCode, ReadErrorCode, ValidationError
from runtime.proto.limits import MAX_DIRECTORY_ENTRIES, MAX_READ_RESULT_BYTES
from runtime.proto.paths import is_entry_name, is_workspace_path
from runtime.proto.strictness import LENIENT, STRICT

_STRICT = STRICT
_OUT = LENIENT
INVALID = ReadErrorCode.INVALID_REQUEST
DIRECTORY = "directory"

READ_REJECTED_CODES = frozenset(ReadErrorCode) - {ReadErrorCode.READ_UNCONFIRMED}


class WorkspaceRead(msgspec.Struct, **_STRICT):
    environment_id: str
    path: str
    handle: str = ""
    run_id: str = ""
    operation: Literal["", "directory"] = ""
    max_bytes: int = 0
    max_entries: int = 0

    @property
    def is_directory(self) -> bool:
        return self.operation == DIRECTORY

    def validate(self) -> None:
        """One owner, an Environment, a valid path and the limit of exactly one mode."""
        if bool(self.handle) == bool(self.run_id) or not self.environment_id:
            raise ValidationError(INVALID, "read needs one owner and an environment")
        if not is_workspace_path(self.path, allow_root=self.is_directory):
            raise ValidationError(INVALID, "read path is invalid")
        if self.is_directory:
            valid = self.max_bytes == 0 and 1 <= self.max_entries <= MAX_DIRECTORY_ENTRIES
        else:
            valid = self.max_entries == 0 and 1 <= self.max_bytes <= MAX_READ_RESULT_BYTES
        if not valid:
            raise ValidationError(INVALID, "read limits are invalid for the operation")


class EntryKind(StrEnum):
    FILE = "file"  # carries size_bytes >= 0
    DIRECTORY = "directory"  # size_bytes is null, as for every other kind
    SYMLINK = "symlink"
    OTHER = "other"


class DirectoryEntry(msgspec.Struct, **_OUT):
    name: str
    kind: EntryKind
    size_bytes: int | None  # always emitted; null except for regular files


class DirectoryListing(msgspec.Struct, **_OUT):
    entries: list[DirectoryEntry]
    truncated: bool  # explicit, always emitted

    def check(self, max_entries: int) -> None:
        """At most `max_entries` (<= 1024) unique single-component names; only files
        carry a size. Raises ValidationError(`invalid_receipt`)."""
        if not 1 <= max_entries <= MAX_DIRECTORY_ENTRIES or len(self.entries) > max_entries:
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "too many entries")
        names = {entry.name for entry in self.entries}
        if len(names) != len(self.entries) or not all(is_entry_name(name) for name in names):
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "entry names are invalid")
        for entry in self.entries:
            if entry.kind == EntryKind.FILE:
                valid = entry.size_bytes is not None and entry.size_bytes >= 0
            else:
                valid = entry.size_bytes is None
            if not valid:
                raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "entry size is invalid")


class ReadOutcome(StrEnum):
    COMPLETED = "completed"
    REJECTED = "rejected"
    UNKNOWN = "unknown"


class WorkspaceReadResult(msgspec.Struct, **_OUT):
    outcome: ReadOutcome
    data: bytes = b""
    truncated: bool = False
    close_acknowledged: bool = False
    error_code: str = ""
    directory: DirectoryListing | None = None

    def check(self, request: WorkspaceRead) -> None:
        """Accept only a result that answers `request`; raises ValidationError
        (`invalid_receipt`), after which the read's effect stays unknown."""
        if len(self.data) > MAX_READ_RESULT_BYTES:
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "read result is too large")
        if self.outcome == ReadOutcome.COMPLETED:
            self._check_completed(request)
            return
        if self.data or self.truncated or self.directory is not None:
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "a failed read carries data")
        if self.outcome == ReadOutcome.UNKNOWN:
            valid = self.error_code == ReadErrorCode.READ_UNCONFIRMED
        else:
            valid = self.error_code in READ_REJECTED_CODES and (
                request.is_directory or self.error_code != ReadErrorCode.NOT_DIRECTORY
            )
        if not valid:
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "read error code is invalid")

    def _check_completed(self, request: WorkspaceRead) -> None:
        if not self.close_acknowledged or self.error_code:
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "read was not settled")
        if request.is_directory:
            if self.directory is None or self.data or self.truncated:
                raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "listing is missing")
            self.directory.check(request.max_entries)
            return
        if self.directory is not None or len(self.data) > request.max_bytes:
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "bytes exceed the request")
        if self.truncated and len(self.data) != request.max_bytes:
            raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "truncation is inexact")

"""`workspace_read` requests and results: byte and directory modes at their limits."""

import msgspec
import pytest

from runtime.proto.errors import DecodeErrorCode, ReadErrorCode, ValidationError
from runtime.proto.limits import MAX_DIRECTORY_ENTRIES, MAX_READ_RESULT_BYTES
from runtime.proto.workspace import (
    DirectoryEntry,
    DirectoryListing,
    EntryKind,
    ReadOutcome,
    WorkspaceRead,
    WorkspaceReadResult,
)

BYTES = WorkspaceRead("env", "notes.txt", handle="handle", max_bytes=10)
LISTING = WorkspaceRead("env", "", run_id="run", operation="directory", max_entries=3)


def _read(**changes: object) -> WorkspaceRead:
    return msgspec.structs.replace(BYTES, **changes)


def _files(count: int) -> list[DirectoryEntry]:
    return [DirectoryEntry(f"f{index}", EntryKind.FILE, index) for index in range(count)]


def _listing(entries: list[DirectoryEntry], truncated: bool = False) -> WorkspaceReadResult:
    return WorkspaceReadResult(
        ReadOutcome.COMPLETED,
        close_acknowledged=True,
        directory=DirectoryListing(entries, truncated),
    )


@pytest.mark.parametrize(
    "request_",
    [
        BYTES,
        LISTING,
        _read(max_bytes=1),
        _read(max_bytes=MAX_READ_RESULT_BYTES),
        msgspec.structs.replace(LISTING, max_entries=1),
        msgspec.structs.replace(LISTING, max_entries=MAX_DIRECTORY_ENTRIES),
        msgspec.structs.replace(LISTING, path="sub/dir"),
    ],
)
def test_valid_read_requests(request_: WorkspaceRead) -> None:
    request_.validate()


@pytest.mark.parametrize(
    "request_",
    [
        _read(max_bytes=0),
        _read(max_bytes=MAX_READ_RESULT_BYTES + 1),
        _read(max_entries=5),
        _read(path=""),
        _read(path="../etc/passwd"),
        _read(path="/abs"),
        _read(run_id="run"),
        _read(handle=""),
        _read(environment_id=""),
        msgspec.structs.replace(LISTING, max_entries=0),
        msgspec.structs.replace(LISTING, max_entries=MAX_DIRECTORY_ENTRIES + 1),
        msgspec.structs.replace(LISTING, max_bytes=10),
    ],
)
def test_invalid_read_requests_are_rejected(request_: WorkspaceRead) -> None:
    with pytest.raises(ValidationError) as caught:
        request_.validate()
    assert caught.value.code == ReadErrorCode.INVALID_REQUEST


def test_a_full_byte_read_and_an_exact_truncation_are_accepted() -> None:
    WorkspaceReadResult(ReadOutcome.COMPLETED, data=b"x" * 4, close_acknowledged=True).check(BYTES)
    WorkspaceReadResult(
        ReadOutcome.COMPLETED, data=b"x" * 10, truncated=True, close_acknowledged=True
    ).check(BYTES)
    largest = _read(max_bytes=MAX_READ_RESULT_BYTES)
    data = b"x" * MAX_READ_RESULT_BYTES
    WorkspaceReadResult(ReadOutcome.COMPLETED, data=data, close_acknowledged=True).check(largest)


@pytest.mark.parametrize(
    "result",
    [
        WorkspaceReadResult(ReadOutcome.COMPLETED, data=b"x"),
        WorkspaceReadResult(ReadOutcome.COMPLETED, data=b"x" * 11, close_acknowledged=True),
        WorkspaceReadResult(
            ReadOutcome.COMPLETED, data=b"x" * 9, truncated=True, close_acknowledged=True
        ),
        WorkspaceReadResult(
            ReadOutcome.COMPLETED, data=b"x" * (MAX_READ_RESULT_BYTES + 1), close_acknowledged=True
        ),
        WorkspaceReadResult(ReadOutcome.COMPLETED, close_acknowledged=True, error_code="not_found"),
        _listing(_files(1)),
        WorkspaceReadResult(ReadOutcome.REJECTED, error_code="not_directory"),
        WorkspaceReadResult(ReadOutcome.REJECTED, error_code="read_unconfirmed"),
        WorkspaceReadResult(ReadOutcome.REJECTED, error_code="private detail"),
        WorkspaceReadResult(ReadOutcome.REJECTED, data=b"x", error_code="not_found"),
        WorkspaceReadResult(ReadOutcome.UNKNOWN, error_code="not_found"),
        WorkspaceReadResult(ReadOutcome.UNKNOWN, data=b"x", error_code="read_unconfirmed"),
    ],
)
def test_invalid_byte_read_results_prove_nothing(result: WorkspaceReadResult) -> None:
    with pytest.raises(ValidationError) as caught:
        result.check(BYTES)
    assert caught.value.code == DecodeErrorCode.INVALID_RECEIPT


@pytest.mark.parametrize("code", sorted(set(ReadErrorCode) - {"read_unconfirmed"}))
def test_every_finite_rejection_code_is_accepted_for_a_listing(code: str) -> None:
    WorkspaceReadResult(ReadOutcome.REJECTED, error_code=code).check(LISTING)


def test_an_unconfirmed_read_is_unknown() -> None:
    WorkspaceReadResult(ReadOutcome.UNKNOWN, error_code="read_unconfirmed").check(BYTES)


def test_a_listing_holds_up_to_max_entries_and_at_most_1024() -> None:
    largest = msgspec.structs.replace(LISTING, max_entries=MAX_DIRECTORY_ENTRIES)
    _listing(_files(MAX_DIRECTORY_ENTRIES), truncated=True).check(largest)
    _listing([]).check(LISTING)
    _listing(_files(3)).check(LISTING)
    for result, request_ in [
        (_listing(_files(4)), LISTING),
        (_listing(_files(MAX_DIRECTORY_ENTRIES + 1)), largest),
    ]:
        with pytest.raises(ValidationError):
            result.check(request_)


@pytest.mark.parametrize(
    "entry",
    [
        DirectoryEntry("", EntryKind.FILE, 1),
        DirectoryEntry(".", EntryKind.DIRECTORY, None),
        DirectoryEntry("..", EntryKind.DIRECTORY, None),
        DirectoryEntry("a/b", EntryKind.FILE, 1),
        DirectoryEntry("x" * 256, EntryKind.FILE, 1),
        DirectoryEntry("file", EntryKind.FILE, None),
        DirectoryEntry("file", EntryKind.FILE, -1),
        DirectoryEntry("dir", EntryKind.DIRECTORY, 0),
        DirectoryEntry("link", EntryKind.SYMLINK, 3),
        DirectoryEntry("fifo", EntryKind.OTHER, 0),
    ],
)
def test_invalid_entries_are_rejected(entry: DirectoryEntry) -> None:
    with pytest.raises(ValidationError):
        _listing([entry]).check(LISTING)


def test_every_entry_kind_and_the_longest_name_are_accepted() -> None:
    entries = [
        DirectoryEntry("x" * 255, EntryKind.FILE, 0),
        DirectoryEntry("dir", EntryKind.DIRECTORY, None),
        DirectoryEntry("link", EntryKind.SYMLINK, None),
    ]
    _listing(entries).check(LISTING)
    with pytest.raises(ValidationError):
        _listing([entries[1], entries[1]]).check(LISTING)


def test_a_listing_must_state_truncation_and_entry_sizes_explicitly() -> None:
    decode = msgspec.json.Decoder(DirectoryListing).decode
    assert decode(b'{"entries":[],"truncated":false}') == DirectoryListing([], False)
    encoded = msgspec.json.encode(
        DirectoryListing([DirectoryEntry("d", EntryKind.DIRECTORY, None)], False)
    )
    assert b'"size_bytes":null' in encoded and b'"truncated":false' in encoded
    for body in (
        b'{"entries":[]}',
        b'{"entries":null,"truncated":false}',
        b'{"entries":[{"name":"d","kind":"directory"}],"truncated":false}',
        b'{"entries":[{"name":"d","kind":"socket","size_bytes":null}],"truncated":false}',
    ):
        with pytest.raises(msgspec.ValidationError):
            decode(body)


def test_a_listing_result_carries_no_bytes() -> None:
    result = msgspec.structs.replace(_listing(_files(1)), data=b"x")
    with pytest.raises(ValidationError):
        result.check(LISTING)

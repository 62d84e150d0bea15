"""Workspace-relative paths, logical `/workspace` paths and directory entry names."""

import pytest

from runtime.proto.errors import ValidationError
from runtime.proto.limits import MAX_ENTRY_NAME_BYTES, MAX_WORKSPACE_PATH_BYTES
from runtime.proto.paths import (
    is_entry_name,
    is_logical_path,
    is_workspace_path,
    validate_logical_path,
    validate_workspace_path,
)

LONGEST = "/".join(["a" * 99] * 40) + "/" + "b" * (MAX_WORKSPACE_PATH_BYTES - 4000)


@pytest.mark.parametrize(
    "path", ["a", "a/b.txt", "dir/sub/file", ".hidden", "a..b", "é/ü", LONGEST]
)
def test_workspace_relative_paths_are_accepted(path: str) -> None:
    assert len(LONGEST.encode()) == MAX_WORKSPACE_PATH_BYTES
    validate_workspace_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "",
        ".",
        "..",
        "/abs",
        "a/",
        "a//b",
        "a/./b",
        "a/../b",
        "../a",
        "a\\b",
        "a\x00b",
        "a\rb",
        "a\nb",
        "\ud800",
        LONGEST + "c",
    ],
)
def test_workspace_relative_paths_are_rejected(path: str) -> None:
    with pytest.raises(ValidationError) as caught:
        validate_workspace_path(path)
    assert caught.value.code == "invalid_request"


def test_the_root_is_allowed_only_where_the_operation_allows_it() -> None:
    assert is_workspace_path("", allow_root=True)
    assert not is_workspace_path("")


@pytest.mark.parametrize(
    ("path", "allow_root", "valid"),
    [
        ("/workspace/a", False, True),
        ("/workspace/a/b.txt", False, True),
        ("/workspace", False, False),
        ("/workspace", True, True),
        ("/workspace/", True, False),
        ("/workspace/a/../b", False, False),
        ("/workspace/./a", False, False),
        ("//workspace/a", False, False),
        ("/workspacex/a", False, False),
        ("workspace/a", False, False),
        ("/etc/passwd", False, False),
        ("/workspace/a\\b", False, False),
        ("/workspace/" + "a" * (MAX_WORKSPACE_PATH_BYTES - 11), False, True),
        ("/workspace/" + "a" * (MAX_WORKSPACE_PATH_BYTES - 10), False, False),
    ],
)
def test_logical_paths(path: str, allow_root: bool, valid: bool) -> None:
    assert is_logical_path(path, allow_root=allow_root) is valid
    if not valid:
        with pytest.raises(ValidationError):
            validate_logical_path(path, allow_root=allow_root)


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("a", True),
        ("x" * MAX_ENTRY_NAME_BYTES, True),
        ("x" * (MAX_ENTRY_NAME_BYTES + 1), False),
        ("é" * 127 + "x", True),
        ("é" * 128, False),
        ("", False),
        (".", False),
        ("..", False),
        ("...", True),
        ("a/b", False),
        ("a\\b", False),
        ("a\x00", False),
        ("a\r", False),
        ("a\n", False),
    ],
)
def test_entry_names_are_single_components_of_1_to_255_bytes(name: str, valid: bool) -> None:
    assert is_entry_name(name) is valid

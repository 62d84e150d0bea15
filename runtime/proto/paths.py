"""Path and name rules shared by workspace operations and Runtime preparation.

Two address forms exist on the wire:

* workspace-relative paths (`workspace_read`, `workspace_write`): slash-separated
  plain names below the bound workspace, no leading or trailing slash, no empty, `.`
  or `..` component; `""` selects the root only where the operation allows it;
* logical paths (`runtime_prepare`): clean absolute paths under `/workspace`.

Both are at most 4096 UTF-8 bytes and contain no backslash, NUL, CR or LF. The caller
never supplies a filesystem root; the Runtime resolves addresses against its binding.
Directory entry names are single components of 1..255 UTF-8 bytes.
"""

from __future__ import annotations

import posixpath

from runtime.proto.errors import ValidationError
from runtime.proto.identities import utf8_size
from runtime.proto.limits import MAX_ENTRY_NAME_BYTES, MAX_WORKSPACE_PATH_BYTES

WORKSPACE_ROOT = "/workspace"
FORBIDDEN_PATH_CHARACTERS = frozenset("\\\x00\r\n")
FORBIDDEN_NAME_CHARACTERS = frozenset("/\\\x00\r\n")
INVALID_REQUEST = "invalid_request"


def _bounded(value: str) -> bool:
    size = utf8_size(value)
    return (
        size is not None
        and size <= MAX_WORKSPACE_PATH_BYTES
        and not FORBIDDEN_PATH_CHARACTERS.intersection(value)
    )


def is_workspace_path(path: str, *, allow_root: bool = False) -> bool:
    """True for a workspace-relative path; `""` (the root) only when `allow_root`."""
    if path == "":
        return allow_root
    if not _bounded(path):
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


def validate_workspace_path(
    path: str, *, allow_root: bool = False, code: str = INVALID_REQUEST
) -> None:
    if not is_workspace_path(path, allow_root=allow_root):
        raise ValidationError(code, "workspace path is invalid")


def is_logical_path(path: str, *, allow_root: bool = False) -> bool:
    """True for a clean absolute path under `/workspace` (the root only if `allow_root`)."""
    if not _bounded(path) or path.startswith("//") or posixpath.normpath(path) != path:
        return False
    return (allow_root and path == WORKSPACE_ROOT) or path.startswith(WORKSPACE_ROOT + "/")


def validate_logical_path(
    path: str, *, allow_root: bool = False, code: str = INVALID_REQUEST
) -> None:
    if not is_logical_path(path, allow_root=allow_root):
        raise ValidationError(code, "logical workspace path is invalid")


def is_entry_name(name: str) -> bool:
    """True for one directory entry name: a single component of 1..255 UTF-8 bytes."""
    size = utf8_size(name)
    return (
        size is not None
        and 0 < size <= MAX_ENTRY_NAME_BYTES
        and name not in (".", "..")
        and not FORBIDDEN_NAME_CHARACTERS.intersection(name)
    )

"""The workspace paths a client may name: absolute POSIX paths under /workspace/,
outside the reserved folders, short enough for any file system to hold. Environment
files, a hosted environment's (or a session's inline environment's) `files`, templates
and listings are checked here before anything is stored or sent to a Runtime. Pure
rules; no I/O."""

from __future__ import annotations

from typing import Any

from allinone.core.errors import InvalidRequest
from runtime.proto.limits import MAX_ENTRY_NAME_BYTES, MAX_WORKSPACE_PATH_BYTES

WORKSPACE = "/workspace"
RESERVED = ("/workspace/.codex", "/workspace/.managed-agents", "/workspace/.skills")


def reserved(path: str) -> bool:
    """Whether `path` is one of the reserved folders or lies below one."""
    return any(path == r or path.startswith(r + "/") for r in RESERVED)


def check_listing_path(path: Any, param: str) -> str:
    """A directory to list: `/workspace` itself, `/workspace/outputs`, or any path
    `check_path` accepts."""
    if path in (WORKSPACE, WORKSPACE + "/outputs"):
        return str(path)
    return check_path(path, param)


def check_path(path: Any, param: str) -> str:
    """An absolute POSIX path under /workspace/ with no empty, `.` or `..` segments, that
    a file system can hold (`check_size`)."""
    if not isinstance(path, str) or not path.startswith(WORKSPACE + "/") or len(path) > 4096:
        raise InvalidRequest("path must be an absolute path under /workspace/.", param)
    segments = path[len(WORKSPACE) + 1 :].split("/")
    if any(s in ("", ".", "..") for s in segments) or any(c in path for c in "\\\0\r\n"):
        raise InvalidRequest("path must not contain empty, '.' or '..' segments.", param)
    if path == WORKSPACE + "/outputs" or any(
        path == r or path.startswith(r + "/") or path.startswith(r + "-") for r in RESERVED
    ):
        raise InvalidRequest("path is reserved.", param)
    check_size(path, param)
    return path


def check_size(path: str, param: str) -> None:
    """Refuse (400 naming `param`) a path over 4096 bytes in UTF-8, or with a component
    over 255 bytes: the OS limits (PATH_MAX, NAME_MAX) no workspace can exceed."""
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequest("path must be valid UTF-8.", param) from exc
    if len(encoded) > MAX_WORKSPACE_PATH_BYTES:
        raise InvalidRequest(
            f"path must be at most {MAX_WORKSPACE_PATH_BYTES} bytes in UTF-8.", param
        )
    if any(len(part.encode("utf-8")) > MAX_ENTRY_NAME_BYTES for part in path.split("/")):
        raise InvalidRequest(
            f"Each component of path must be at most {MAX_ENTRY_NAME_BYTES} bytes in UTF-8.",
            param,
        )


def never_held(path: str) -> bool:
    """Whether no file system can hold `path`: a component longer than 255 characters is
    over every NAME_MAX (255 bytes, or 255 UTF-16 units), so a write there certainly
    did not happen."""
    return any(len(part) > MAX_ENTRY_NAME_BYTES for part in path.split("/"))

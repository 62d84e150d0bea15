"""Workspace bindings and the filesystem operations the Runtime performs in them.

A binding maps an Environment's canonical UUID to a directory: `openai_hosted`
workspaces live under the Runtime's own `workspaces_root`; a `self_hosted` binding names
the user's directory, which must be absolute and exist, and be under one of the
Runtime's allowed roots when it has any. Every path from Core is workspace-relative and
is resolved without following a symlink out of the workspace; nothing here overwrites an
existing file.

    WorkspaceError(code)        an operation refused with a finite wire code
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path

from runtime.proto import limits
from runtime.proto.workspace import DirectoryEntry, DirectoryListing, EntryKind

OUTPUTS = "outputs"


class WorkspaceError(Exception):
    def __init__(self, code: str, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


@dataclass(frozen=True)
class Binding:
    environment_id: str
    type: str
    root: Path


class Workspaces:
    """The bindings a Runtime serves. Bindings outlive connections: the directories
    are the user's or the Runtime's, not a connection's."""

    def __init__(self, workspaces_root: Path | None, allowed_roots: tuple[Path, ...] = ()) -> None:
        self._root = workspaces_root
        self._allowed = allowed_roots
        self._bindings: dict[str, Binding] = {}

    def bind(self, environment_id: str, type_: str, directory: str) -> Binding:
        existing = self._bindings.get(environment_id)
        if type_ == "openai_hosted":
            if self._root is None:
                raise WorkspaceError("unsupported_configuration", "no managed workspaces here")
            if directory:
                raise WorkspaceError("invalid_configuration", "a managed workspace names no path")
            root = self._root / environment_id
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
        else:
            path = Path(directory)
            if not directory or not path.is_absolute() or ".." in path.parts:
                raise WorkspaceError("invalid_configuration", "workspace must be absolute")
            if not path.is_dir():
                raise WorkspaceError("resource_unavailable", "workspace directory is missing")
            if self._allowed and not any(_within(path, allowed) for allowed in self._allowed):
                raise WorkspaceError("session_binding_conflict", "workspace is not served here")
            root = path
        binding = Binding(environment_id, type_, root.resolve())
        if existing is not None and existing != binding:
            raise WorkspaceError("session_binding_conflict", "environment is bound elsewhere")
        self._bindings[environment_id] = binding
        return binding

    def get(self, environment_id: str) -> Binding | None:
        return self._bindings.get(environment_id)


def _within(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def resolve(binding: Binding, relative: str) -> Path:
    """Resolve a workspace-relative path; refuse anything that leaves the workspace."""
    parts = [part for part in relative.split("/") if part]
    if not parts:
        return binding.root
    target = binding.root.joinpath(*parts)
    parent = target.parent.resolve()
    if not _within(parent, binding.root):
        raise WorkspaceError("permission_denied", "path leaves the workspace")
    return parent / target.name


def read_bytes(binding: Binding, relative: str, max_bytes: int) -> tuple[bytes, bool]:
    path = resolve(binding, relative)
    try:
        info = path.lstat()
    except FileNotFoundError as exc:
        raise WorkspaceError("not_found", "no such file") from exc
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError("not_found", "not a regular file")
    with path.open("rb") as handle:
        data = handle.read(max_bytes + 1)
    return data[:max_bytes], len(data) > max_bytes


def list_directory(binding: Binding, relative: str, max_entries: int) -> DirectoryListing:
    path = resolve(binding, relative)
    try:
        info = path.lstat()
    except FileNotFoundError as exc:
        raise WorkspaceError("not_directory", "no such directory") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise WorkspaceError("not_directory", "not a directory")
    entries: list[DirectoryEntry] = []
    truncated = False
    with os.scandir(path) as scan:
        for entry in sorted(scan, key=lambda e: e.name):
            encoded = entry.name.encode("utf-8", "surrogateescape")
            if len(encoded) > limits.MAX_ENTRY_NAME_BYTES:
                continue
            if len(entries) >= max_entries:
                truncated = True
                break
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISREG(mode):
                entries.append(
                    DirectoryEntry(
                        name=entry.name,
                        kind=EntryKind.FILE,
                        size_bytes=entry.stat(follow_symlinks=False).st_size,
                    )
                )
            elif stat.S_ISDIR(mode):
                entries.append(
                    DirectoryEntry(name=entry.name, kind=EntryKind.DIRECTORY, size_bytes=None)
                )
            elif stat.S_ISLNK(mode):
                entries.append(
                    DirectoryEntry(name=entry.name, kind=EntryKind.SYMLINK, size_bytes=None)
                )
            else:
                entries.append(
                    DirectoryEntry(name=entry.name, kind=EntryKind.OTHER, size_bytes=None)
                )
    return DirectoryListing(entries=entries, truncated=truncated)


def write_new_file(binding: Binding, relative: str, data: bytes) -> None:
    """Create `relative` with `data` (parents created); refuse to replace anything."""
    path = resolve(binding, relative)
    if path.is_dir():
        raise WorkspaceError("write_rejected", "a directory is there", "destination_directory")
    if path.exists() or path.is_symlink():
        raise WorkspaceError("write_rejected", "the destination exists", "unsafe_destination")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise WorkspaceError("write_rejected", "a parent is a file", "unsafe_destination") from exc
    temporary = path.with_name(f".{path.name}.corebox-partial")
    with temporary.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    try:
        os.link(temporary, path)  # fails if something appeared at the destination meanwhile
    except FileExistsError as exc:
        raise WorkspaceError(
            "write_rejected", "the destination exists", "unsafe_destination"
        ) from exc
    finally:
        temporary.unlink(missing_ok=True)


def export_outputs(binding: Binding) -> bytes:
    """A tar archive of the regular files under `outputs/` (symlinks and others skipped)."""
    buffer = io.BytesIO()
    outputs = binding.root / OUTPUTS
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        if outputs.is_dir() and not outputs.is_symlink():
            for directory, dirnames, filenames in os.walk(outputs, followlinks=False):
                dirnames.sort()
                for name in sorted(filenames):
                    path = Path(directory) / name
                    if not stat.S_ISREG(path.lstat().st_mode):
                        continue
                    archive.add(path, arcname=str(path.relative_to(binding.root)), recursive=False)
    return buffer.getvalue()

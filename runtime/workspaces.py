"""Workspace bindings and the filesystem operations the Runtime performs in them.

A binding maps an Environment's canonical UUID to a directory: `openai_hosted`
workspaces live under the Runtime's own `workspaces_root`; a `self_hosted` binding names
the user's directory, which must be absolute, exist, and (after resolving symlinks) lie
under one of the Runtime's allowed roots, never inside or around a denied path (the data
directory) nor inside the managed workspaces of other Environments.

Every path from Core, a harness or a tool is workspace-relative: an absolute path or a
`..` component is refused, and no symlink inside the workspace is followed for a read,
write, listing, export or capture. Nothing here overwrites an existing file unless the
caller asks to replace a regular file.

    WorkspaceError(code)        an operation refused with a finite wire code
"""

from __future__ import annotations

import io
import logging
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.confinement import Confinement, Sandbox
from runtime.errors import RuntimeFault
from runtime.proto import limits
from runtime.proto.execution import WorkspaceSeed
from runtime.proto.workspace import DirectoryEntry, DirectoryListing, EntryKind
from runtime.snapshots import SnapshotError, Snapshots

log = logging.getLogger(__name__)

OUTPUTS = "outputs"
WORKSPACE_PREFIX = "/workspace/"


class WorkspaceError(RuntimeFault):
    def __init__(self, code: str, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


@dataclass(frozen=True)
class Binding:
    environment_id: str
    type: str
    root: Path


def real(path: str | Path) -> Path:
    """`path` with every symlink resolved (missing components kept as written)."""
    return Path(os.path.realpath(path))


def within(path: Path, root: Path) -> bool:
    """Whether the already-resolved `path` is `root` or lies below it."""
    return path == root or root in path.parents


class Workspaces:
    """The bindings a Runtime serves and the host paths it may serve them from.
    Bindings outlive connections: the directories are the user's or the Runtime's, not a
    connection's. `allowed_roots` (a sequence, or a callable asked at every binding) bound
    `self_hosted` directories (none: no `self_hosted` binding is served); `denied` paths
    are never part of any workspace; `sandbox` confines the commands run in them."""

    def __init__(
        self,
        workspaces_root: Path | None,
        allowed_roots: Sequence[Path] | Callable[[], Sequence[Path]] = (),
        denied: Sequence[Path] = (),
        sandbox: Sandbox | None = None,
        snapshots: Snapshots | None = None,
    ) -> None:
        self._root = workspaces_root
        self.snapshots = snapshots
        self._allowed = allowed_roots if callable(allowed_roots) else tuple(allowed_roots)
        self._denied = tuple(real(path) for path in denied)
        self.sandbox = sandbox or Sandbox(Confinement("none"), self._denied)
        self._bindings: dict[str, Binding] = {}

    def bind(
        self, environment_id: str, type_: str, directory: str, seed: WorkspaceSeed | None = None
    ) -> Binding:
        existing = self._bindings.get(environment_id)
        if type_ == "openai_hosted":
            root = self._managed(environment_id, directory, seed)
        else:
            root = self._self_hosted(directory)
        binding = Binding(environment_id, type_, root)
        if existing is not None and existing != binding:
            raise WorkspaceError("session_binding_conflict", "environment is bound elsewhere")
        self._bindings[environment_id] = binding
        return binding

    def _managed(self, environment_id: str, directory: str, seed: WorkspaceSeed | None) -> Path:
        if directory:
            raise WorkspaceError("invalid_configuration", "a managed workspace names no path")
        root = self._managed_root(environment_id)
        if seed is not None:
            self.seed(environment_id, seed)
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        return real(root)

    def _managed_root(self, environment_id: str) -> Path:
        if self._root is None:
            raise WorkspaceError("unsupported_configuration", "no managed workspaces here")
        if not environment_id or "/" in environment_id or environment_id.startswith("."):
            raise WorkspaceError("invalid_configuration", "not an environment id")
        return self._root / environment_id

    def seed(self, environment_id: str, seed: WorkspaceSeed) -> None:
        """Create the managed workspace of `environment_id` from a snapshot, unless it
        exists already; raises WorkspaceError. Blocking (it copies files): the
        dispatcher runs it off the event loop, one at a time per environment."""
        root = self._managed_root(environment_id)
        if root.exists():
            return
        if self.snapshots is None:
            raise WorkspaceError("resource_unavailable", "this Runtime keeps no snapshots")
        try:
            root.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.snapshots.seed(root, seed.environment_id, seed.snapshot)
        except SnapshotError as exc:
            raise WorkspaceError(exc.code, str(exc)) from exc
        except OSError as exc:
            raise WorkspaceError("resource_unavailable", "the workspace was not seeded") from exc

    def snapshot(self, binding: Binding, snapshot_id: str) -> str:
        """Snapshot a managed workspace as `snapshot_id`; returns the id, or "" when none
        was taken (not managed, no snapshots here, too large or failed). Blocking."""
        if self.snapshots is None or binding.type != "openai_hosted":
            return ""
        try:
            self.snapshots.take(binding.root, binding.environment_id, snapshot_id)
        except (SnapshotError, OSError) as exc:
            log.warning("workspace snapshot %s not taken: %s", snapshot_id, type(exc).__name__)
            return ""
        return snapshot_id

    def _self_hosted(self, directory: str) -> Path:
        path = Path(directory)
        if not directory or not path.is_absolute() or ".." in path.parts:
            raise WorkspaceError("invalid_configuration", "workspace must be absolute")
        root = real(path)
        allowed = self._allowed() if callable(self._allowed) else self._allowed
        if not any(within(root, real(entry)) for entry in allowed):
            raise WorkspaceError("invalid_configuration", "workspace is outside the allowed roots")
        if any(within(root, denied) or within(denied, root) for denied in self._denied):
            raise WorkspaceError("invalid_configuration", "workspace overlaps a denied path")
        if self._root is not None and (
            within(root, real(self._root)) or within(real(self._root), root)
        ):
            raise WorkspaceError("invalid_configuration", "workspace overlaps managed workspaces")
        if not root.is_dir():
            raise WorkspaceError("resource_unavailable", "workspace directory is missing")
        return root

    def get(self, environment_id: str) -> Binding | None:
        return self._bindings.get(environment_id)


def parts_of(relative: str) -> list[str]:
    """The components of a workspace-relative path; `/workspace/` may lead it. Refuses
    any other absolute path and any `..` component."""
    if relative.startswith(WORKSPACE_PREFIX) or relative == WORKSPACE_PREFIX.rstrip("/"):
        relative = relative.removeprefix(WORKSPACE_PREFIX.rstrip("/"))
    elif relative.startswith("/"):
        raise WorkspaceError("permission_denied", "absolute paths are refused")
    parts = [part for part in relative.split("/") if part and part != "."]
    if ".." in parts or any("\0" in part for part in parts):
        raise WorkspaceError("permission_denied", "path leaves the workspace")
    return parts


def resolve(binding: Binding, relative: str) -> Path:
    """Resolve a workspace-relative path without following any symlink: every existing
    directory on the way must be a real directory; the last component may be missing
    but is never a symlink when it exists."""
    target = binding.root
    for part in parts_of(relative):
        target = target / part
        try:
            info = target.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise WorkspaceError("permission_denied", "symlinks are not followed")
    return target


def _open_regular(path: Path) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError as exc:
        raise WorkspaceError("not_found", "no such file") from exc
    except OSError as exc:
        raise WorkspaceError("permission_denied", "not readable") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WorkspaceError("not_found", "not a regular file")
    return fd


def read_bytes(binding: Binding, relative: str, max_bytes: int) -> tuple[bytes, bool]:
    fd = _open_regular(resolve(binding, relative))
    with os.fdopen(fd, "rb") as handle:
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
    """Create `relative` with `data` (parents created); refuse to replace anything.

    Any failure is a `WorkspaceError` and means the file was not written: it appears only
    through one link(2), which either makes the name or fails having made nothing. The
    OS refusing the path (a name over NAME_MAX, a path over PATH_MAX, a full disk) is
    such a definite failure, and the directories this call made for the file are
    removed again."""
    _write(binding, relative, data, replace=False)


def write_file(binding: Binding, relative: str, data: bytes) -> None:
    """Write `relative` with `data` (parents created), replacing a regular file there
    atomically: the bytes are staged in a new file in the same directory, flushed to
    disk, and renamed over the path, so it holds the old file or the new one, never a
    mix. A symlink (never followed), a directory or any other non-regular file there is
    refused and stays as it is.

    Any failure is a `WorkspaceError` and means the file was not written, as for
    `write_new_file`: the rename either puts the new file at the path or fails having
    changed nothing."""
    _write(binding, relative, data, replace=True)


def _write(binding: Binding, relative: str, data: bytes, replace: bool) -> None:
    created: list[Path] = []
    try:
        path = _destination(binding, relative, created)
        _check_occupant(path, replace)
        temporary = _staged(path, data)
        try:
            if replace:
                # rename(2) replaces the name itself, never what a link appearing
                # meanwhile points at, and fails on a directory.
                os.replace(temporary, path)
            else:
                os.link(temporary, path)  # fails if something appeared there meanwhile
        except FileExistsError as exc:
            raise WorkspaceError(
                "write_rejected", "the destination exists", "unsafe_destination"
            ) from exc
        finally:
            _discard(temporary)
    except OSError as exc:
        _remove_directories(created)
        refused = f"the file system refused it: {exc.strerror}"
        raise WorkspaceError("write_rejected", refused) from exc
    except WorkspaceError:
        _remove_directories(created)
        raise


def _check_occupant(path: Path, replace: bool) -> None:
    """Refuse what is at `path` unless it is nothing, or a regular file to `replace`
    (`_destination` already refused a symlink and a directory)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if not (replace and stat.S_ISREG(info.st_mode)):
        raise WorkspaceError("write_rejected", "the destination exists", "unsafe_destination")


def replace_file(binding: Binding, relative: str, data: bytes) -> None:
    """Write `relative` with `data`, replacing a regular file there (never a symlink or a
    directory, which stay as they are)."""
    path = _destination(binding, relative)
    temporary = _staged(path, data)
    try:
        os.replace(temporary, path)  # replaces the link itself if one appeared meanwhile
    finally:
        _discard(temporary)


def _destination(binding: Binding, relative: str, created: list[Path] | None = None) -> Path:
    path = resolve(binding, relative)
    if path == binding.root:
        raise WorkspaceError("write_rejected", "a directory is there", "destination_directory")
    if path.is_symlink():
        raise WorkspaceError("write_rejected", "a symlink is there", "unsafe_destination")
    if path.is_dir():
        raise WorkspaceError("write_rejected", "a directory is there", "destination_directory")
    try:
        _make_parents(binding, path.parent, [] if created is None else created)
    except (FileExistsError, NotADirectoryError) as exc:
        raise WorkspaceError("write_rejected", "a parent is a file", "unsafe_destination") from exc
    return path


def _make_parents(binding: Binding, directory: Path, created: list[Path]) -> None:
    """Create the missing directories from the workspace root down, one at a time, so a
    symlink that appears on the way is never followed; each one made is added to
    `created`."""
    current = binding.root
    for part in directory.relative_to(binding.root).parts:
        current = current / part
        try:
            current.mkdir()
        except FileExistsError:
            if current.is_symlink() or not current.is_dir():
                raise
            continue
        created.append(current)


def _remove_directories(created: list[Path]) -> None:
    """Remove the directories a failed write made, deepest first; one something else
    has put an entry in meanwhile stays."""
    for directory in reversed(created):
        try:
            directory.rmdir()
        except OSError:
            return


def _staged(path: Path, data: bytes) -> Path:
    """`data` in a new file beside `path`, flushed to disk. The staging name is short
    whatever `path`'s name is, so any name the file system holds can be written; a
    failure leaves no staging file behind."""
    temporary = path.with_name(f".corebox-partial-{os.urandom(8).hex()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        _discard(temporary)
        raise
    return temporary


def _discard(temporary: Path) -> None:
    """Remove a staging file; failing to changes no outcome (the write itself already
    happened or did not), so it is logged, not raised."""
    try:
        temporary.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("could not remove a staging file: %s", exc.strerror)


def export_outputs(binding: Binding) -> bytes:
    """A tar archive of the regular files under `outputs/`: symlinks (files or
    directories) and other kinds are skipped, never followed."""
    import tarfile  # here, not at start: only a turn that exports outputs writes a tar

    buffer = io.BytesIO()
    outputs = binding.root / OUTPUTS
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        if outputs.is_dir() and not outputs.is_symlink():
            for directory, dirnames, filenames in os.walk(outputs, followlinks=False):
                dirnames.sort()
                for name in sorted(filenames):
                    path = Path(directory) / name
                    try:
                        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                    except OSError:
                        continue  # a symlink, or gone
                    with os.fdopen(fd, "rb") as handle:
                        info = os.fstat(handle.fileno())
                        if not stat.S_ISREG(info.st_mode):
                            continue
                        entry = archive.gettarinfo(
                            arcname=str(path.relative_to(binding.root)), fileobj=handle
                        )
                        archive.addfile(entry, handle)
    return buffer.getvalue()

"""Snapshots of managed (`openai_hosted`) workspaces at the end of each Run, and new
managed workspaces seeded from one (a forked session's workspace).

    <snapshots_root>/<environment wire id>/<snapshot id>/...    one immutable tree

A snapshot is built in a staging directory beside its final place and renamed into it,
so it exists whole or not at all; once made it is never written again. Cheap by
construction: a regular file whose size, modification time (ns) and mode match the
same path in the environment's previous snapshot is a hard link to that snapshot's file
(both are immutable, so sharing an inode is safe); any other file is cloned (a reflink,
where the filesystem supports FICLONE) or copied. The workspace itself is never
hard-linked: commands may change its files in place. Symlinks are kept as links (no
workspace operation follows them); other special files are left out.

Retention: the MAX_WORKSPACE_SNAPSHOTS most recent snapshots of each environment are
kept (ordered by their ids, which are time-ordered run ids); older ones are removed.
A workspace larger than MAX_SNAPSHOT_BYTES is not snapshotted.

Seeding copies (clones) a snapshot into a new workspace, again through a staging
directory, and never links: the new workspace is mutable.

    SnapshotError(code)     no snapshot can be read or made (a finite wire code)
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import stat
from pathlib import Path

from runtime.errors import RuntimeFault
from runtime.proto import limits

log = logging.getLogger(__name__)

FICLONE = 0x40049409  # Linux ioctl: share the source's extents (btrfs, xfs, ...)
STAGING_PREFIX = ".staging-"


class SnapshotError(RuntimeFault):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _safe_name(name: str) -> bool:
    return bool(name) and "/" not in name and not name.startswith(".") and len(name) <= 255


class Snapshots:
    """The snapshots under `root` (created on first use)."""

    def __init__(self, root: Path, keep: int = limits.MAX_WORKSPACE_SNAPSHOTS) -> None:
        self.root = root
        self._keep = keep

    def path(self, environment_id: str, snapshot_id: str) -> Path:
        if not (_safe_name(environment_id) and _safe_name(snapshot_id)):
            raise SnapshotError("invalid_configuration", "not a snapshot name")
        return self.root / environment_id / snapshot_id

    def names(self, environment_id: str) -> list[str]:
        """The environment's snapshot ids, oldest first."""
        directory = self.root / environment_id
        if not directory.is_dir():
            return []
        return sorted(
            entry.name
            for entry in os.scandir(directory)
            if entry.is_dir(follow_symlinks=False) and _safe_name(entry.name)
        )

    def take(self, workspace: Path, environment_id: str, snapshot_id: str) -> Path:
        """Snapshot `workspace` as `snapshot_id`; returns its path (an existing snapshot
        of that id is kept as it is). Blocking: call it off the event loop."""
        final = self.path(environment_id, snapshot_id)
        if final.is_dir():
            return final
        earlier = self.names(environment_id)
        previous = self.path(environment_id, earlier[-1]) if earlier else None
        staging = final.parent / f"{STAGING_PREFIX}{snapshot_id}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True, mode=0o700)
        try:
            _Tree(previous).copy(workspace, staging)
            os.rename(staging, final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        self._prune(environment_id)
        return final

    def seed(self, workspace: Path, environment_id: str, snapshot_id: str) -> None:
        """Fill the new workspace `workspace` (which must not exist yet) from a snapshot;
        raises SnapshotError(`resource_unavailable`) when there is no such snapshot."""
        source = self.path(environment_id, snapshot_id)
        if not source.is_dir():
            raise SnapshotError("resource_unavailable", "the workspace snapshot is gone")
        staging = workspace.parent / f"{STAGING_PREFIX}{workspace.name}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True, mode=0o700)
        try:
            _Tree(None, limit=0).copy(source, staging)
            os.rename(staging, workspace)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def _prune(self, environment_id: str) -> None:
        names = self.names(environment_id)
        for name in names[: max(len(names) - self._keep, 0)]:
            shutil.rmtree(self.root / environment_id / name, ignore_errors=True)


class _Tree:
    """One copy of a directory tree, linking unchanged files from `previous`."""

    def __init__(self, previous: Path | None, limit: int = limits.MAX_SNAPSHOT_BYTES) -> None:
        self._previous = previous
        self._limit = limit
        self._bytes = 0

    def copy(self, source: Path, target: Path, relative: Path = Path()) -> None:
        with os.scandir(source) as entries:
            for entry in entries:
                self._entry(entry, target / entry.name, relative / entry.name)

    def _entry(self, entry: os.DirEntry[str], destination: Path, relative: Path) -> None:
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(entry.path), destination)
        elif stat.S_ISDIR(info.st_mode):
            destination.mkdir(mode=stat.S_IMODE(info.st_mode) | 0o700)
            self.copy(Path(entry.path), destination, relative)
        elif stat.S_ISREG(info.st_mode):
            self._bytes += info.st_size
            if self._limit and self._bytes > self._limit:
                raise SnapshotError("resource_unavailable", "the workspace is too large")
            if not self._link_unchanged(info, destination, relative):
                clone(Path(entry.path), destination)
                os.chmod(destination, stat.S_IMODE(info.st_mode))
                os.utime(destination, ns=(info.st_atime_ns, info.st_mtime_ns))

    def _link_unchanged(self, info: os.stat_result, destination: Path, relative: Path) -> bool:
        if self._previous is None:
            return False
        earlier = self._previous / relative
        try:
            before = os.stat(earlier, follow_symlinks=False)
        except OSError:
            return False
        if not (
            stat.S_ISREG(before.st_mode)
            and before.st_size == info.st_size
            and before.st_mtime_ns == info.st_mtime_ns
            and before.st_mode == info.st_mode
        ):
            return False
        try:
            os.link(earlier, destination)
        except OSError:
            return False
        return True


def clone(source: Path, destination: Path) -> None:
    """Copy one regular file: a reflink where the filesystem allows it, bytes otherwise."""
    with open(source, "rb") as src, open(destination, "wb") as dst:
        try:
            fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())
            return
        except OSError:
            pass
    shutil.copyfile(source, destination)  # the kernel's fast copy where there is one

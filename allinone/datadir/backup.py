"""`corebox backup FILE` and `corebox restore FILE --data-dir DIR`.

A backup is one tar file:
    manifest.json       {"format": "corebox-backup", "version": 1, "created_at",
                         "schema_version", "files": {name: {"size", "sha256"}}}
    corebox.db          a consistent copy made with SQLite's online backup
    secrets/...         the Core key, the vault key and every other file there
    default-project.key the default project's key, when the first start wrote one (the
                        commands that act for a project read it)
    blobs/...           the content-addressed blob store, when there is one

Consistency while a server runs: the database copy is one snapshot (the backup API
copies every page under one read transaction), so it holds every write acknowledged
before the backup started. Blobs are written and synced before any row references
them and are never changed, so copying the blob store after the snapshot finds every
blob the snapshot references. Secrets only ever gain files.

Restore writes into a new or empty directory (or, with `replace`, over a stopped
server's directory), checks every file against the manifest, and runs
`PRAGMA integrity_check` on the restored database before it reports success.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from allinone.credentials import KEY_FILE
from allinone.datadir import Progress, no_progress
from allinone.datadir.collection import BLOBS_DIR, DATABASE_FILE
from storage import migrations
from storage.database import check_schema

FORMAT = "corebox-backup"
VERSION = 1
MANIFEST = "manifest.json"
SECRETS_DIR = "secrets"
CHUNK = 1 << 20


class BackupError(Exception):
    """A backup or restore cannot complete; the message is the one line the user sees."""


def _digest(path: Path) -> str:
    hasher = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


def _snapshot(db_path: Path, target: Path) -> int:
    """Copy the live database to `target` in one consistent step; return its schema
    version."""
    if not db_path.is_file():
        raise BackupError(f"no database at {db_path}")
    # A copy of an earlier build's database is restored as it is, and upgraded by the
    # server that starts on it; a newer build's data directory is that build's to copy.
    check_schema(db_path, older=True)
    source = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)  # pages=-1: every page under one read transaction
        copy.execute("PRAGMA journal_mode=DELETE")
        row = copy.execute("SELECT MAX(version) FROM schema_version").fetchone()
        return int(row[0] or 0)
    finally:
        copy.close()
        source.close()


def _members(data_dir: Path) -> list[tuple[str, Path]]:
    """The files of the data directory a backup carries besides the database."""
    found: list[tuple[str, Path]] = []
    for folder in (SECRETS_DIR, BLOBS_DIR):
        root = data_dir / folder
        if root.is_dir():
            for path in sorted(root.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    found.append((path.relative_to(data_dir).as_posix(), path))
    key = data_dir / KEY_FILE
    if key.is_file() and not key.is_symlink():
        found.append((KEY_FILE, key))
    return found


def backup(data_dir: Path, target: Path, *, on_progress: Progress = no_progress) -> dict[str, Any]:
    """Write a backup of `data_dir` to `target` (replaced atomically); return its manifest."""
    target = target.resolve()
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise BackupError(f"cannot write {target}: {target.parent} is not a writable directory")
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        snapshot = Path(work) / DATABASE_FILE
        schema = _snapshot(data_dir / DATABASE_FILE, snapshot)
        members = [(DATABASE_FILE, snapshot), *_members(data_dir)]
        files = {name: {"size": p.stat().st_size, "sha256": _digest(p)} for name, p in members}
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "created_at": int(time.time()),
            "schema_version": schema,
            "files": files,
        }
        staged = Path(work) / "backup.tar"
        with tarfile.open(staged, "w") as tar:
            _add_bytes(tar, MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
            for index, (name, path) in enumerate(members):
                tar.add(path, arcname=name, recursive=False, filter=_private)
                on_progress(index + 1, len(members))
        with staged.open("rb") as handle:
            os.fsync(handle.fileno())
        staged.chmod(0o600)
        os.replace(staged, target)
    return manifest


def _private(member: tarfile.TarInfo) -> tarfile.TarInfo:
    """Every file of a backup is the owner's alone, wherever the archive is unpacked (the
    database holds every session; the data directory's own 0700 does not travel)."""
    member.mode = 0o600
    return member


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    tar.addfile(info, io.BytesIO(data))


def restore(
    source: Path, data_dir: Path, *, replace: bool = False, on_progress: Progress = no_progress
) -> dict[str, Any]:
    """Restore the backup `source` into `data_dir`; return its manifest. The directory
    must be new or empty unless `replace` (the server using it must be stopped)."""
    if not source.is_file():
        raise BackupError(f"cannot read {source}: there is no such file")
    if (data_dir / DATABASE_FILE).exists() and not replace:
        raise BackupError(f"{data_dir} already holds a database (stop its server; --replace)")
    from allinone.startup import DatabaseLock  # the server's start-up, for restore only

    made = not data_dir.exists()
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        with DatabaseLock.held(data_dir / DATABASE_FILE, BackupError):
            return _restore_into(source, data_dir, on_progress)
    except BackupError:
        if made:  # a refused backup leaves no directory behind
            shutil.rmtree(data_dir, ignore_errors=True)
        raise


def _restore_into(source: Path, data_dir: Path, on_progress: Progress) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=data_dir) as work:
        staging = Path(work)
        manifest = _extract(source, staging, on_progress)
        _check_integrity(staging / DATABASE_FILE)
        for stale in data_dir.glob(DATABASE_FILE + "-*"):
            stale.unlink()  # a replaced database's WAL must not be replayed onto the copy
        for name in manifest["files"]:
            destination = data_dir / name
            destination.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.replace(staging / name, destination)
    return manifest


def _extract(source: Path, staging: Path, on_progress: Progress) -> dict[str, Any]:
    try:
        with tarfile.open(source, "r") as tar:
            try:
                return _extract_members(tar, source, staging, on_progress)
            except tarfile.TarError as exc:
                raise BackupError(f"{source} is damaged ({exc})") from exc
    except tarfile.TarError as exc:  # its reason lists each compression it tried
        raise BackupError(f"{source} is not a corebox backup (not a tar archive)") from exc


def _extract_members(
    tar: tarfile.TarFile, source: Path, staging: Path, on_progress: Progress
) -> dict[str, Any]:
    manifest = _manifest(tar, source)
    files: dict[str, dict[str, Any]] = manifest["files"]
    for index, (name, expected) in enumerate(sorted(files.items())):
        if name.startswith("/") or ".." in Path(name).parts:
            raise BackupError(f"{source}: unsafe member name {name!r}")
        try:
            member = tar.extractfile(name)
        except KeyError:
            member = None
        if member is None:
            raise BackupError(f"{source}: {name} is missing")
        path = staging / name
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with member, path.open("wb") as out:
            shutil.copyfileobj(member, out, CHUNK)
            out.flush()
            os.fsync(out.fileno())
        path.chmod(0o600)
        if _digest(path) != expected["sha256"]:
            raise BackupError(f"{source}: {name} does not match its checksum")
        on_progress(index + 1, len(files))
    return manifest


def _manifest(tar: tarfile.TarFile, source: Path) -> dict[str, Any]:
    try:
        handle = tar.extractfile(MANIFEST)
        manifest: dict[str, Any] = json.loads(handle.read()) if handle else {}
    except (KeyError, ValueError) as exc:
        raise BackupError(f"{source} has no readable manifest") from exc
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise BackupError(f"{source} is not a corebox backup this build reads")
    if DATABASE_FILE not in manifest.get("files", {}):
        raise BackupError(f"{source} holds no database")
    schema = manifest.get("schema_version")
    if isinstance(schema, int) and schema > migrations.latest():
        raise BackupError(
            f"{source} holds database schema version {schema}, newer than this build"
            f" supports ({migrations.latest()})"
        )
    return manifest


def _check_integrity(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    try:
        result = conn.execute("PRAGMA integrity_check").fetchone()[0]
        conn.execute("PRAGMA journal_mode=WAL")
    finally:
        conn.close()
    if result != "ok":
        raise BackupError(f"the restored database fails its integrity check: {result}")

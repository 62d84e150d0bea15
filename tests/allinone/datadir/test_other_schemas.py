"""The data directory's commands never migrate the database: on an earlier build's
schema (which that build may be serving) and on a newer build's, each refuses in one
line with exit status 1 and leaves the file byte for byte as it was; `backup` copies an
earlier build's database as it is, and `restore` puts such a copy back. Only `corebox
serve` migrates, as it starts."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import subprocess
import tarfile
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from allinone.datadir import bundle
from allinone.datadir.collection import DATABASE_FILE
from allinone.startup import DatabaseLock
from storage import migrations
from storage.database import migrate
from tests.allinone.datadir.test_data_command_errors import refused
from tests.allinone.datadir.test_gc import corebox

FIXTURES = Path(__file__).parents[2] / "upgrade" / "fixtures"
LATEST = migrations.latest()
OLDER = (
    "is older than this build's ({latest}): start `corebox serve` once to upgrade it (stop"
    " any older corebox serving it first); nothing was changed"
)


def _fixture(data_dir: Path) -> int:
    """The data directory schema 11's own build wrote (tests/upgrade), with its sessions."""
    with tarfile.open(FIXTURES / "schema_0011.tar.gz") as tar:
        tar.extractall(data_dir, filter="data")
    return 11


def _previous(data_dir: Path) -> int:
    """A database as the build before this one made it: the schema the files up to the
    previous version make, in WAL mode, each version recorded."""
    version = LATEST - 1
    data_dir.mkdir(mode=0o700)
    with closing(sqlite3.connect(data_dir / DATABASE_FILE, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(migrations.snapshot(version))
        db.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at INTEGER)")
        for number, _ in migrations.available():
            if number <= version:
                db.execute("INSERT INTO schema_version VALUES (?, 0)", (number,))
    return version


def _newer(data_dir: Path) -> int:
    """A database a newer build wrote: this build's schema with a later version recorded."""
    data_dir.mkdir(mode=0o700)
    migrate(data_dir / DATABASE_FILE)
    with closing(sqlite3.connect(data_dir / DATABASE_FILE, isolation_level=None)) as db:
        db.execute("INSERT INTO schema_version VALUES (?, 0)", (LATEST + 1,))
    return LATEST + 1


def _files(data_dir: Path) -> dict[str, bytes]:
    """The data directory's files and their bytes. A read of a WAL database may leave
    SQLite's shared-memory index and an empty log beside it, which hold no data."""
    found = {p.name: p.read_bytes() for p in sorted(data_dir.iterdir()) if p.is_file()}
    found.pop(f"{DATABASE_FILE}-shm", None)
    if not found.get(f"{DATABASE_FILE}-wal", b"x"):
        del found[f"{DATABASE_FILE}-wal"]
    return found


def _minimal_bundle(path: Path) -> Path:
    header = {"format": bundle.FORMAT, "version": max(bundle.READABLE_VERSIONS)}
    path.write_text(json.dumps({"header": header}))
    return path


def _commands(tmp_path: Path) -> list[tuple[str, ...]]:
    given = _minimal_bundle(tmp_path / "given.bundle")
    return [
        ("gc", "--retention-days", "0"),
        ("gc", "--dry-run"),
        ("storage",),
        ("storage", "--json"),
        ("export", "-o", str(tmp_path / "out.bundle")),
        ("export", "-o", str(tmp_path / "out.bundle"), "--project", "proj_any"),
        ("import", str(given)),
        ("import", str(given), "--project", "proj_any"),
    ]


@pytest.mark.parametrize("make", [_fixture, _previous], ids=["schema 11", "previous schema"])
def test_an_earlier_schema_is_refused_in_one_line_and_left_as_it_was(
    make: Callable[[Path], int], tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    version = make(data_dir)
    said = f"database schema version {version} " + OLDER.format(latest=LATEST)
    # As the earlier build serving it would, hold its lock: nothing here waits for it.
    lock = DatabaseLock.acquire(data_dir / DATABASE_FILE)
    before = _files(data_dir)
    try:
        for command in _commands(tmp_path):
            refused(corebox(data_dir, *command), said)
            assert _files(data_dir) == before, command
    finally:
        lock.release()
    assert not (tmp_path / "out.bundle").exists()


def test_a_newer_schema_is_refused_in_one_line_and_left_as_it_was(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    version = _newer(data_dir)
    before = _files(data_dir)
    said = f"database schema version {version} is newer than this build supports ({LATEST})"
    for command in [*_commands(tmp_path), ("backup", str(tmp_path / "corebox.backup"))]:
        refused(corebox(data_dir, *command), said)
        assert _files(data_dir) == before, command
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "given.bundle"]


def test_an_earlier_schema_is_backed_up_and_restored_as_it_is(tmp_path: Path) -> None:
    """What serve upgrades at its next start: the copy keeps the earlier schema."""
    data_dir = tmp_path / "data"
    version = _fixture(data_dir)
    before = _files(data_dir)
    backup = tmp_path / "old.backup"
    made = corebox(data_dir, "backup", str(backup))
    assert (made.returncode, made.stderr) == (0, ""), made.stderr
    assert _files(data_dir) == before
    restored = tmp_path / "restored"
    done = corebox(restored, "restore", str(backup))
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(f" (schema {version})\n")
    with closing(sqlite3.connect(restored / DATABASE_FILE)) as db:
        assert db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == version


def test_a_backup_of_a_newer_schema_is_not_restored(tmp_path: Path) -> None:
    database = tmp_path / "corebox.db"
    database.write_bytes(b"a newer build's database")
    manifest = {
        "format": "corebox-backup",
        "version": 1,
        "created_at": 0,
        "schema_version": LATEST + 1,
        "files": {
            DATABASE_FILE: {
                "size": database.stat().st_size,
                "sha256": hashlib.sha256(database.read_bytes()).hexdigest(),
            }
        },
    }
    backup = tmp_path / "newer.backup"
    with tarfile.open(backup, "w") as tar:
        data = json.dumps(manifest).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        tar.add(database, arcname=DATABASE_FILE)
    target = tmp_path / "restored"
    done: subprocess.CompletedProcess[str] = corebox(target, "restore", str(backup))
    refused(
        done,
        f"{backup} holds database schema version {LATEST + 1}, newer than this build"
        f" supports ({LATEST})",
    )
    assert not target.exists()

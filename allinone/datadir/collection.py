"""Garbage collection of the data directory.

`collect` purges what was deleted at least `retention_seconds` ago (the explicit cascade
of `storage.purge`) in one transaction, then removes what lives outside the database:
the managed workspace directories of purged environments, and any directory under
`workspaces/` that no environment names any more. Last, it returns freed pages to the
filesystem (incremental vacuum; a database created before incremental vacuum existed is
switched over by one full VACUUM). With `dry_run` nothing changes: the purge runs and is
rolled back, so the report says what a collection at that moment would remove.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from allinone.datadir import Progress, no_progress
from storage import purge
from storage.blobs import BlobStore
from storage.database import Database, Tx

log = logging.getLogger(__name__)

WORKSPACES_DIR = "workspaces"
SNAPSHOTS_DIR = "snapshots"  # managed workspaces as each turn left them
BLOBS_DIR = "blobs"
DATABASE_FILE = "corebox.db"


@dataclass
class Report:
    """What a collection removed (or would remove, for a dry run)."""

    dry_run: bool
    rows: dict[str, int] = field(default_factory=dict)
    sessions: int = 0
    directories: list[str] = field(default_factory=list)
    blobs: list[str] = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0

    def summary(self) -> str:
        verb = "would remove" if self.dry_run else "removed"
        freed = max(0, self.bytes_before - self.bytes_after)
        # A dry run frees nothing, and how much a real run frees is known only after it.
        database = (
            f"database {self.bytes_before:,} bytes"
            if self.dry_run
            else f"database {self.bytes_before:,} -> {self.bytes_after:,} bytes ({freed:,} freed)"
        )
        return (
            f"gc {verb} {sum(self.rows.values())} rows ({self.sessions} sessions) and "
            f"{len(self.directories)} workspace and snapshot directories and"
            f" {len(self.blobs)} blobs; {database}"
        )


def database_bytes(path: Path) -> int:
    """The database file and its write-ahead log, in bytes."""
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())


async def collect(
    db: Database,
    data_dir: Path,
    *,
    now: int,
    retention_seconds: int,
    dry_run: bool = False,
    on_progress: Progress = no_progress,
) -> Report:
    """Purge what was deleted at or before `now - retention_seconds`; see the module."""
    db_path = data_dir / DATABASE_FILE
    report = Report(dry_run=dry_run, bytes_before=database_bytes(db_path))
    on_progress(0, 3)
    cutoff = now - retention_seconds

    async def job(tx: Tx) -> purge.Collected:
        return await purge.collect(tx, cutoff, now=now, dry_run=dry_run)

    done = await db.write(job)
    report.rows, report.sessions = done.rows, len(done.sessions)
    if dry_run:
        report.blobs = BlobStore(data_dir / BLOBS_DIR).sweep(done.referenced, dry_run=True)
    else:
        report.blobs = await db.write(partial(_sweep_blobs, data_dir=data_dir))
    on_progress(1, 3)
    live = await db.read(lambda r: r.fetchall("SELECT wire_id FROM environments"))
    keep = {str(row["wire_id"]) for row in live} - set(done.workspaces)
    report.directories = _stale_workspaces(data_dir, keep)
    if not dry_run:
        for name in report.directories:
            shutil.rmtree(data_dir / name, ignore_errors=True)
        await asyncio.to_thread(vacuum, db_path)
    on_progress(2, 3)
    report.bytes_after = database_bytes(db_path)
    on_progress(3, 3)
    log.info("%s", report.summary())
    return report


async def _sweep_blobs(tx: Tx, data_dir: Path) -> list[str]:
    """Remove the blobs no row references, holding the writer's lock (see
    `storage.blobs`)."""
    return BlobStore(data_dir / BLOBS_DIR).sweep(await purge.referenced_blobs(tx))


def _stale_workspaces(data_dir: Path, live: set[str]) -> list[str]:
    """Managed workspace directories, and their turn-end snapshots, that no environment
    names: each relative to the data directory."""
    stale: list[str] = []
    for top in (WORKSPACES_DIR, SNAPSHOTS_DIR):
        root = data_dir / top
        if root.is_dir():
            stale += [
                f"{top}/{p.name}" for p in root.iterdir() if p.is_dir() and p.name not in live
            ]
    return sorted(stale)


def vacuum(db_path: Path) -> None:
    """Return the database's free pages to the filesystem and fold the write-ahead log
    in. Safe while a server uses the database (it waits for the writer's lock)."""
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=30)
    try:
        mode = conn.execute("PRAGMA auto_vacuum").fetchone()[0]
        if mode != 2:  # not INCREMENTAL yet: switching needs one full VACUUM
            conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            conn.execute("VACUUM")
        else:
            # The pragma frees one page per step; executescript steps it to the end.
            conn.executescript("PRAGMA incremental_vacuum;")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


class Retention:
    """The scheduler's retention job: `collect` with the configured retention."""

    def __init__(
        self, db: Database, data_dir: Path, now: Callable[[], int], retention_seconds: int
    ) -> None:
        self._db = db
        self._data_dir = data_dir
        self._now = now
        self._retention_seconds = retention_seconds

    async def run(self) -> Report:
        return await collect(
            self._db,
            self._data_dir,
            now=self._now(),
            retention_seconds=self._retention_seconds,
        )

"""Storage faults against a real SQLite file: a full database (`PRAGMA max_page_count` on
the writer, which SQLite reports exactly as a full disk) and a read-only one
(`PRAGMA query_only`, which holds for root too) raise `StorageUnavailable` with the
reason, change nothing, are remembered as `failure` until a write succeeds, and a
durable write goes through as soon as the store takes writes again."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest

from storage import Database, StorageUnavailable
from storage.database import Tx

BIG = "x" * 200_000  # needs dozens of new pages


def insert(key: str, value: str = BIG):  # type: ignore[no-untyped-def]
    async def job(tx: Tx) -> None:
        await tx.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (key, value))

    return job


async def pragma(db: Database, statement: str) -> None:
    async def job(tx: Tx) -> None:
        await tx.execute(statement)

    await db.write(job)


async def fill(db: Database) -> None:
    """Let the database grow by no page at all: the next allocation fails as SQLITE_FULL."""
    row = await db.read(lambda r: r.fetchone("PRAGMA page_count"))
    assert row is not None
    await pragma(db, f"PRAGMA max_page_count = {int(row[0])}")


async def keys(db: Database) -> list[str]:
    rows = await db.read(lambda r: r.fetchall("SELECT key FROM meta WHERE key LIKE 'k%'"))
    return sorted(row["key"] for row in rows)


def test_a_full_database_is_unavailable_and_changes_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "full.db")
        try:
            await fill(db)
            with pytest.raises(StorageUnavailable) as refused:
                await db.write(insert("k1"))
            assert refused.value.reason == "disk_full"
            assert db.failure is refused.value
            assert await keys(db) == []
            await pragma(db, "PRAGMA max_page_count = 1073741823")
            assert db.failure is None  # a write succeeded again
            await db.write(insert("k2"))
            assert await keys(db) == ["k2"]
        finally:
            await db.close()

    asyncio.run(main())


def test_a_read_only_database_is_unavailable(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "ro.db")
        try:
            await pragma(db, "PRAGMA query_only = ON")
            with pytest.raises(StorageUnavailable) as refused:
                await db.write(insert("k1", "small"))
            assert refused.value.reason == "read_only"
            assert db.failure is not None
        finally:
            await db.close()

    asyncio.run(main())


def test_a_durable_write_goes_through_once_the_store_takes_writes_again(tmp_path: Path) -> None:
    async def main() -> None:
        db = await Database.open(tmp_path / "retry.db")
        attempts = 0
        attempted = asyncio.Event()

        async def settle(tx: Tx) -> str:
            nonlocal attempts
            attempts += 1
            attempted.set()
            await tx.execute("INSERT INTO meta (key, value) VALUES ('k-settled', ?)", (BIG,))
            return "settled"

        try:
            await fill(db)
            durable = asyncio.create_task(db.write_durably(settle))
            await attempted.wait()  # the first attempt ran into the full database
            await pragma(db, "PRAGMA max_page_count = 1073741823")
            assert await asyncio.wait_for(durable, 10) == "settled"
            assert attempts >= 2
            assert await keys(db) == ["k-settled"]
        finally:
            await db.close()

    asyncio.run(main())


def test_an_unwritable_database_file_is_refused_at_open(tmp_path: Path) -> None:
    path = tmp_path / "immutable.db"
    asyncio.run(_open_close(path))
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    # The immutable attribute refuses writes to root as well (unlike file modes).
    if subprocess.run(["chattr", "+i", str(path)], check=False).returncode != 0:
        pytest.skip("this filesystem has no immutable attribute")
    try:
        with pytest.raises(StorageUnavailable, match="not writable"):
            asyncio.run(_open_close(path))
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


async def _open_close(path: Path) -> None:
    db = await Database.open(path)
    await db.close()

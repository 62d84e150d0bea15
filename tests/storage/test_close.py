"""Database.close: the writer is stopped and the connections closed, and a cancellation
aimed at the caller is never swallowed on the way."""

from __future__ import annotations

import asyncio

import pytest

from storage import Database
from storage.database import Tx
from tests.storage.conftest import Target


def test_a_cancelled_close_still_closes_and_propagates_the_cancellation(target: Target) -> None:
    async def main() -> None:
        db = await Database.open(target("corebox.db"))

        async def job(tx: Tx) -> None:
            await tx.execute("CREATE TABLE t (x INTEGER)")

        await db.write(job)
        closing = asyncio.create_task(db.close())
        # close() runs up to its wait for the writer in this first step; the cancel then
        # lands on close() itself, not on the writer it is waiting for.
        await asyncio.sleep(0)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        await db.close()  # already closed: returns at once

    asyncio.run(main())


def test_close_after_writes_keeps_them(target: Target) -> None:
    path = target("corebox.db")

    async def write_then_close() -> None:
        db = await Database.open(path)

        async def job(tx: Tx) -> None:
            await tx.execute("CREATE TABLE t (x INTEGER)")
            await tx.execute("INSERT INTO t VALUES (1)")

        await db.write(job)
        await db.close()

    async def read() -> object:
        db = await Database.open(path)
        try:
            return await db.read(lambda r: r.fetchone("SELECT x FROM t"))
        finally:
            await db.close()

    asyncio.run(write_then_close())
    row = asyncio.run(read())
    assert row is not None

"""Schema 24 keys the journal by a small integer per session: every event an earlier
build journaled reads back the same after the upgrade, and every session, old and new,
has a key of its own."""

from __future__ import annotations

import asyncio
import sqlite3
import tarfile
from contextlib import closing
from functools import partial
from pathlib import Path

from storage import Database, journal

FIXTURE = Path(__file__).with_name("fixtures") / "schema_0011.tar.gz"


def test_the_events_of_an_earlier_build_read_the_same_after_schema_24(tmp_path: Path) -> None:
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    path = tmp_path / "corebox.db"
    with closing(sqlite3.connect(path)) as db:
        before = db.execute(
            "SELECT session_id, seq, payload FROM session_events ORDER BY session_id, seq"
        ).fetchall()
    assert before

    async def main() -> tuple[list[tuple[str, int, str]], list[int]]:
        database = await Database.open(path)
        try:
            after = []
            for session_id in sorted({row[0] for row in before}):
                rows = await database.read(partial(journal.after, session_id=session_id, seq=0))
                after += [(session_id, row["seq"], row["payload"]) for row in rows]
            keys = await database.read(
                lambda r: r.fetchall("SELECT journal_key FROM sessions ORDER BY journal_key")
            )
            return after, [int(row["journal_key"]) for row in keys]
        finally:
            await database.close()

    after, keys = asyncio.run(main())
    assert after == before
    assert len(set(keys)) == len(keys) and all(key > 0 for key in keys)

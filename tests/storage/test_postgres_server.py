"""PostgreSQL only: text with U+0000 is refused as `Unstorable`; a server that goes away
makes the store unavailable (nothing acknowledged, `failure` set), and the store takes
writes again once the server is back, on new connections, without reopening the
database."""

from __future__ import annotations

import asyncio
import socket

import pytest

from storage import Database, StorageUnavailable, Unstorable
from storage.database import Tx
from tests.support.postgres import Cluster


def _put(key: str):  # type: ignore[no-untyped-def]
    async def job(tx: Tx) -> None:
        await tx.execute("INSERT INTO meta (key, value) VALUES (?, 'v')", (key,))

    return job


def test_a_lost_server_is_unavailable_and_the_store_recovers_with_it(
    own_cluster: Cluster,
) -> None:
    url = own_cluster.fresh_database()

    async def main() -> list[str]:
        db = await Database.open(url)
        try:
            await db.write(_put("before"))
            own_cluster.halt()
            with pytest.raises(StorageUnavailable):
                await db.write(_put("lost"))
            assert db.failure is not None
            with pytest.raises(StorageUnavailable):
                await db.read(lambda r: r.fetchall("SELECT key FROM meta"))
            own_cluster.resume()
            await db.write(_put("after"))
            assert db.failure is None
            rows = await db.read(lambda r: r.fetchall("SELECT key FROM meta ORDER BY key"))
            return [str(row["key"]) for row in rows]
        finally:
            await db.close()

    assert asyncio.run(main()) == ["after", "before"]


def test_text_with_u0000_is_unstorable_and_changes_nothing(postgres_url: str) -> None:
    async def main() -> list[str]:
        db = await Database.open(postgres_url)
        try:
            with pytest.raises(Unstorable):
                await db.write(_put("nul\x00inside"))
            await db.write(_put("plain"))
            rows = await db.read(lambda r: r.fetchall("SELECT key FROM meta ORDER BY key"))
            return [str(row["key"]) for row in rows]
        finally:
            await db.close()

    assert asyncio.run(main()) == ["plain"]


def test_an_unreachable_server_is_refused_at_open_without_its_password() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        url = f"postgresql://corebox:s3cret@127.0.0.1:{port}/corebox"
        with pytest.raises(StorageUnavailable) as refused:
            asyncio.run(Database.open(url))
    assert refused.value.reason == "cannot_open"
    assert "s3cret" not in str(refused.value)

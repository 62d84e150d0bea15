"""The receiver's local store migrates by numbered versions: a store written before
versions were recorded (today's first schema, with data in it) opens at the latest
version with its data kept, and a store from a newer build is refused."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from allinone.receiver.errors import StoreError
from allinone.receiver.schema import LATEST, MIGRATIONS
from allinone.receiver.store import Store

# The first schema, as stores were written before versions were recorded.
FIRST_SCHEMA = MIGRATIONS[0][2]


def _first_store(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(FIRST_SCHEMA)
    event = {
        "seq": 7,
        "event_id": "cevt_1",
        "stream_id": "cstream_a",
        "type": "message",
        "direction": "inbound",
        "contact_id": "contact_1",
        "created_at": 100,
        "contact_expires_at": 2_000_000_000,
        "message": {"text": "kept"},
    }
    conn.execute(
        "INSERT INTO events (event_id, seq, contact_id, type, direction, body, created_at,"
        " contact_expires_at, receipted, pending, saved_at)"
        " VALUES ('cevt_1', 7, 'contact_1', 'message', 'inbound', ?, 100, 2000000000, 0, 1, 100)",
        (json.dumps(event),),
    )
    conn.execute("INSERT INTO meta (key, value) VALUES ('stream_id', '\"cstream_a\"')")
    conn.commit()
    conn.close()
    path.chmod(0o600)


def test_a_store_of_the_first_schema_opens_and_migrates_with_its_data(tmp_path: Path) -> None:
    path = tmp_path / "receiver.db"
    _first_store(path)
    store = Store.open(path, tmp_path / "receiver.lock")
    try:
        assert store.unreceipted() == [(7, "cevt_1")]  # the event now names its stream
        assert store.counts()["pending"] == 1
    finally:
        store.close()
    conn = sqlite3.connect(path)
    versions = [row[0] for row in conn.execute("SELECT version FROM schema_version")]
    (stream,) = conn.execute("SELECT stream_id FROM events").fetchone()
    conn.close()
    assert versions == list(range(1, LATEST + 1)) and stream == "cstream_a"


def test_a_new_store_starts_at_the_latest_version_and_reopens_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "receiver.db"
    for _ in range(2):
        Store.open(path, tmp_path / "receiver.lock").close()
    conn = sqlite3.connect(path)
    versions = [row[0] for row in conn.execute("SELECT version FROM schema_version")]
    conn.close()
    assert versions == list(range(1, LATEST + 1))


def test_a_store_from_a_newer_build_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "receiver.db"
    Store.open(path, tmp_path / "receiver.lock").close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_version (version, name) VALUES (?, 'future')", (LATEST + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        Store.open(path, tmp_path / "receiver.lock")
    # The refusal released the lock: the store can be opened by the right build later.
    with pytest.raises(StoreError, match="newer"):
        Store.open(path, tmp_path / "receiver.lock")

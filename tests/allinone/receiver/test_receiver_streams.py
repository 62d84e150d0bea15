"""The receiver's cursor rules: STREAM_CHANGED and CURSOR_RESET_REQUIRED make it replay
from 0, deduplicated by event_id, so nothing is handled twice."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.allinone.comms.comms_helpers import Owner, pair
from tests.allinone.receiver.receiver_helpers import make_side, once, status
from tests.conftest import Server


def test_a_changed_stream_is_reconciled_before_anything_is_handled(
    server: Server, tmp_path: Path
) -> None:
    owner = Owner(server.base_url)
    alice, bob = pair(server.base_url, owner)
    side = make_side(server, bob, tmp_path / "bob", handler_args=("reply", "once only"))
    alice.open(bob.role_id, "first")
    assert once(side)["settled"] == 1
    once(side)  # pick up its own outbound events
    stream = status(side)["local"]["stream_id"]
    rotated = owner.call(
        "POST", f"/roles/{bob.role_id}/rotate-stream", {"expected_stream_id": stream}
    )
    assert rotated.status == 200
    alice.open(bob.role_id, "second")

    report = once(side)
    assert report["reconciling"] is True and report["settled"] == 0
    assert report["received"] == 1  # only the new event; the replay deduplicated the rest
    local = status(side)["local"]
    assert local["stream_id"] == rotated.body["stream_id"]
    assert local["stream_changed_at"] is not None
    assert once(side)["settled"] == 1
    assert [len(h["pending"]) for h in side.handled()] == [1, 1]


def test_cursor_reset_required_replays_from_zero_without_handling_twice(
    server: Server, tmp_path: Path
) -> None:
    alice, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob", handler_args=("reply", "ok"))
    alice.open(bob.role_id, "hello")
    assert once(side)["settled"] == 1
    # The platform is behind the saved cursor, as after the platform restored a backup.
    conn = sqlite3.connect(side.directory / "receiver.db")
    conn.execute("UPDATE meta SET value = '999' WHERE key = 'next_after'")
    conn.commit()
    conn.close()
    report = once(side)
    assert report["settled"] == 0
    local = status(side)["local"]
    assert local["cursor_reset_at"] is not None and local["next_after"] < 999
    assert len(side.handled()) == 1

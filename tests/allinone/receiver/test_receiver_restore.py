"""A receiver facing a restored platform: it reconciles after the operator rotates the
stream, halts with the reason in `status` when the platform went back in time under the
same stream, and never confirms an event it did not save.

The platform is a real `corebox serve` whose data directory is copied while it is
stopped (the backup) and put back later (the restore); the receiver is left with a
saved, unreceipted event by being killed between its save and its receipt."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from allinone.receiver.errors import Halted
from tests.allinone.comms.comms_helpers import Inst, Owner, pair
from tests.allinone.receiver.receiver_helpers import Side, make_side, once, receiver, status
from tests.conftest import Server, start_server


@dataclass
class Restorable:
    server: Server
    backup: Path

    def restart(self, *, restore: bool) -> None:
        data = self.server.data_dir
        self.server.stop()
        if restore:
            shutil.rmtree(data)
            shutil.copytree(self.backup, data)
        self.server = start_server(data, port=self.server.port)

    def take_backup(self) -> None:
        self.server.stop()
        shutil.copytree(self.server.data_dir, self.backup)
        self.server = start_server(self.server.data_dir, port=self.server.port)


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[Restorable]:
    (tmp_path / "platform").mkdir()
    running = Restorable(start_server(tmp_path / "platform" / "data"), tmp_path / "backup")
    yield running
    running.server.stop()


def _saved_texts(side: Side) -> list[str]:
    rows = side.store("SELECT body FROM events WHERE direction = 'inbound' ORDER BY saved_at")
    return [json.loads(body)["message"]["text"] for (body,) in rows if "message" in body]


def _left_unreceipted(side: Side, alice: Inst, bob: Inst, text: str) -> str:
    """alice writes; bob's receiver saves the event and is killed before its receipt."""
    contact = str(alice.open(bob.role_id, text).body["contact_id"])
    crashed = receiver(side, "once", extra_env={"COREBOX_RECEIVER_FAULT": "crash_before_receipt"})
    assert crashed.returncode == -9
    assert status(side)["local"]["unreceipted"] == 1
    return contact


def test_after_a_restore_and_rotation_it_reconciles_and_confirms_only_what_it_saved(
    platform: Restorable, tmp_path: Path
) -> None:
    owner = Owner(platform.server.base_url)
    alice, bob = pair(platform.server.base_url, owner)
    side = make_side(platform.server, bob, tmp_path / "bob")
    alice.open(bob.role_id, "one")
    assert once(side)["received"] == 1
    platform.take_backup()
    _left_unreceipted(side, alice, bob, "two")  # seq 2, lost by the restore below

    platform.restart(restore=True)
    stream = owner.call("GET", f"/roles/{bob.role_id}").body["stream_id"]
    rotated = owner.call(
        "POST", f"/roles/{bob.role_id}/rotate-stream", {"expected_stream_id": stream}
    )
    assert rotated.status == 200, rotated.body
    three = alice.open(bob.role_id, "three").body["contact_id"]  # reuses seq 2

    report = once(side)
    assert report["reconciling"] is True
    assert _saved_texts(side) == ["one", "two", "three"]
    local = status(side)["local"]
    assert local["stream_id"] == rotated.body["stream_id"]
    assert local["orphaned_events"] == 1 and local["halted"] is None
    assert local["unreceipted"] == 1  # "two": saved, but no stream has it any more
    # "three" is confirmed, and only because it was saved.
    assert alice.communication(three)["latest_outbound_received_at"] is not None


def test_a_restore_without_rotation_halts_with_the_reason_in_status(
    platform: Restorable, tmp_path: Path
) -> None:
    owner = Owner(platform.server.base_url)
    alice, bob = pair(platform.server.base_url, owner)
    side = make_side(platform.server, bob, tmp_path / "bob")
    alice.open(bob.role_id, "one")
    once(side)
    platform.take_backup()
    _left_unreceipted(side, alice, bob, "two")
    platform.restart(restore=True)
    three = alice.open(bob.role_id, "three").body["contact_id"]  # the same seq, same stream

    with pytest.raises(Halted) as halted:
        once(side)
    assert halted.value.code == "STREAM_ROLLED_BACK"
    assert status(side)["local"]["halted"]["code"] == "STREAM_ROLLED_BACK"
    assert alice.communication(three)["latest_outbound_received_at"] is None
    done = receiver(side, "once")
    assert done.returncode == 3 and "STREAM_ROLLED_BACK" in done.stderr

    stream = owner.call("GET", f"/roles/{bob.role_id}").body["stream_id"]
    owner.call("POST", f"/roles/{bob.role_id}/rotate-stream", {"expected_stream_id": stream})
    assert once(side)["reconciling"] is True
    assert status(side)["local"]["halted"] is None
    assert _saved_texts(side) == ["one", "two", "three"]
    assert alice.communication(three)["latest_outbound_received_at"] is not None

"""Acceptance: a handler that times out leaves an `uncertain` job; `resolve` settles it
with the owner's verified result, without running the handler again, reusing the job's
original idempotency key; notifications are deduplicated by notification_id."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.allinone.comms.comms_helpers import pair
from tests.allinone.receiver.receiver_helpers import (
    make_side,
    messages_from_peer,
    once,
    resolve,
    script,
    status,
)
from tests.conftest import Server


def test_a_timed_out_handler_is_resolved_without_running_it_again(
    server: Server, tmp_path: Path
) -> None:
    alice, bob = pair(server.base_url)
    work = tmp_path / "bob" / "work"
    side = make_side(
        server,
        bob,
        tmp_path / "bob",
        notifier=True,
        handler=script("record_handler.py", "hang", timeout_ms=1000, cwd=work),
    )
    contact = alice.open(bob.role_id, "slow question").body["contact_id"]

    first = once(side)
    assert first["settled"] == 0
    attention = status(side)["local"]["attention"]
    assert [(a["state"], a["code"]) for a in attention] == [("uncertain", "HANDLER_TIMEOUT")]
    job_id = attention[0]["job_id"]
    assert len(side.handled()) == 1
    assert [n["notification_id"] for n in side.notified()] == [f"{job_id}-notice"]
    assert alice.communication(contact)["peer_phase"] == "waiting_owner"

    assert once(side)["settled"] == 0  # polling again neither re-runs nor moves on
    assert len(side.handled()) == 1

    done = resolve(
        side,
        {
            "owner_confirmed": True,
            "job_id": job_id,
            "result": {"schema_version": 1, "action": "reply", "message": "checked by hand"},
            "notification_delivered": True,
        },
    )
    assert done.returncode == 0, done.stderr
    settled = once(side)
    assert settled["settled"] == 1
    assert len(side.handled()) == 1
    assert messages_from_peer(alice, contact) == ["checked by hand"]
    assert len(side.notified()) == 1
    assert status(side)["local"]["attention"] == []
    again = resolve(
        side,
        {
            "owner_confirmed": True,
            "job_id": job_id,
            "result": {"schema_version": 1, "action": "reply", "message": "changed"},
            "notification_delivered": True,
        },
    )
    assert again.returncode == 1 and "only waiting_owner" in again.stderr
    # The job's reply key is fixed: the same key with another body is a conflict, even
    # for the holder of the job's current lease.
    key, lease_id, lease_epoch = side.store(
        f"SELECT reply_key, lease_id, lease_epoch FROM jobs WHERE job_id = '{job_id}'"
    )[0]
    changed = bob.reply(contact, "changed", key=key, lease=(lease_id, lease_epoch))
    assert changed.code == "IDEMPOTENCY_CONFLICT"


@pytest.mark.parametrize(
    ("mode", "code"),
    [
        ("garbage", "HANDLER_MALFORMED_OUTPUT"),
        ("big", "HANDLER_OUTPUT_TOO_LARGE"),
        ("crash", "HANDLER_CRASHED"),
    ],
)
def test_bad_handler_results_are_uncertain_too(
    server: Server, tmp_path: Path, mode: str, code: str
) -> None:
    alice, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob", handler_args=(mode,))
    contact = alice.open(bob.role_id, "anything").body["contact_id"]
    once(side)
    attention = status(side)["local"]["attention"]
    assert [(a["state"], a["code"]) for a in attention] == [("uncertain", code)]
    assert messages_from_peer(alice, contact) == []


def test_a_resolved_job_on_a_contact_the_peer_closed_meanwhile_settles(
    server: Server, tmp_path: Path
) -> None:
    alice, bob = pair(server.base_url)
    work = tmp_path / "bob" / "work"
    handler = script("record_handler.py", "hang", timeout_ms=1000, cwd=work)
    side = make_side(server, bob, tmp_path / "bob", handler=handler)
    contact = alice.open(bob.role_id, "slow question").body["contact_id"]
    assert once(side)["settled"] == 0
    job_id = status(side)["local"]["attention"][0]["job_id"]
    assert alice.post(f"/contacts/{contact}/close", {}).status == 200
    result = {"schema_version": 1, "action": "reply", "message": "too late"}
    resolution = {"owner_confirmed": True, "job_id": job_id, "result": result}
    assert resolve(side, {**resolution, "notification_delivered": True}).returncode == 0
    # The platform refuses every write on the closed contact, renewing the lease
    # included; the job settles instead of being retried forever.
    assert once(side)["settled"] == 1
    rows = side.store(f"SELECT state, code FROM jobs WHERE job_id = '{job_id}'")
    assert rows == [("done", "CONTACT_CLOSED")]
    assert status(side)["local"]["attention"] == []
    assert messages_from_peer(alice, contact) == []

"""Acceptance: a receiver killed between saving events and sending the receipt loses
nothing and handles nothing twice; a second receiver on a leased contact gets TASK_BUSY
and never runs its handler; a job interrupted mid-handler becomes uncertain."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.allinone.comms.comms_helpers import pair
from tests.allinone.receiver.receiver_helpers import (
    Side,
    env,
    make_side,
    messages_from_peer,
    once,
    receiver,
    status,
)
from tests.conftest import Server

DEADLINE_SECONDS = 30.0


def wait_for(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    """Poll another process's visible effect, with a bounded deadline."""
    end = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)


def start_once(side: Side) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "allinone", "receiver", "once", "--config", str(side.config)],
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_killed_before_the_receipt_loses_nothing_and_handles_nothing_twice(
    server: Server, tmp_path: Path
) -> None:
    alice, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob", handler_args=("reply", "ack"))
    contact = alice.open(bob.role_id, "please ack").body["contact_id"]
    seq = bob.inbound(contact)[0]["seq"]

    crashed = receiver(side, "once", extra_env={"COREBOX_RECEIVER_FAULT": "crash_before_receipt"})
    assert crashed.returncode == -signal.SIGKILL
    assert bob.me()["instance"]["cursor"] == 0  # no receipt went out
    assert side.store("SELECT seq, receipted, pending FROM events") == [(seq, 0, 1)]
    assert side.store("SELECT value FROM meta WHERE key = 'next_after'") == [(str(seq),)]
    assert side.handled() == []

    first = once(side)
    assert first["received"] == 0 and first["receipted"] == 1 and first["settled"] == 1
    assert bob.me()["instance"]["cursor"] == seq
    second = once(side)
    assert second["settled"] == 0
    assert len(side.handled()) == 1
    assert messages_from_peer(alice, contact) == ["ack"]
    assert alice.communication(contact)["replies_used"] == 1


def test_a_second_receiver_on_a_leased_contact_gets_task_busy(
    server: Server, tmp_path: Path
) -> None:
    alice, bob = pair(server.base_url)
    # The same instance identity installed twice (two machines, two local stores).
    first = make_side(server, bob, tmp_path / "first", handler_args=("wait",))
    second = make_side(server, bob, tmp_path / "second", handler_args=("reply", "dup"))
    contact = alice.open(bob.role_id, "only once").body["contact_id"]

    running = start_once(first)
    try:
        wait_for(lambda: len(first.handled()) == 1, "the first handler to start")
        busy = once(second)
        assert busy["settled"] == 0
        assert status(second)["local"]["jobs"] == {"abandoned": 1}
        assert second.handled() == []
    finally:
        (first.work / "release").write_text("go")
        out, err = running.communicate(timeout=60)
    assert running.returncode == 0, err
    assert json.loads(out)["settled"] == 1

    late = once(second)
    assert late["settled"] == 1  # settled as already handled, without its handler
    jobs = second.store("SELECT state, code FROM jobs ORDER BY created_at")
    assert jobs[-1] == ("done", "TASK_ALREADY_HANDLED")
    assert second.handled() == []
    assert messages_from_peer(alice, contact) == ["released"]


def test_a_receiver_killed_mid_handler_leaves_the_job_uncertain(
    server: Server, tmp_path: Path
) -> None:
    alice, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob", handler_args=("wait",))
    contact = alice.open(bob.role_id, "risky").body["contact_id"]
    running = start_once(side)
    try:
        wait_for(lambda: len(side.handled()) == 1, "the handler to start")
        running.kill()
        running.communicate(timeout=30)
    finally:
        (side.work / "release").write_text("go")  # lets the orphaned adapter exit
    after = once(side)
    assert after["settled"] == 0
    attention = status(side)["local"]["attention"]
    assert [(a["contact_id"], a["state"], a["code"]) for a in attention] == [
        (contact, "uncertain", "HANDLER_INTERRUPTED")
    ]
    assert len(side.handled()) == 1  # never re-run blindly
    assert messages_from_peer(alice, contact) == []


def test_messages_on_a_contact_the_peer_closed_are_not_handed_to_the_handler(
    server: Server, tmp_path: Path
) -> None:
    alice, bob = pair(server.base_url)
    side = make_side(server, bob, tmp_path / "bob", handler_args=("reply", "too late"))
    contact = alice.open(bob.role_id, "never mind").body["contact_id"]
    assert alice.post(f"/contacts/{contact}/close", {}).status == 200
    report = once(side)
    assert report["received"] == 2 and report["settled"] == 0
    assert side.handled() == []
    assert status(side)["local"]["pending"] == 0

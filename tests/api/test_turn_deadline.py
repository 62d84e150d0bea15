"""A turn's deadline (`x_corebox.turn_deadline_seconds`) is kept with the turn: a
restart, by SIGTERM or kill -9, does not start it again. A turn whose deadline passed
while corebox was down fails `turn_deadline_exceeded` at once when corebox is back,
without a new worker running it, whether it was sleeping in a directive or waiting for a
function result. A pause stops the deadline: a turn paused past it, across a kill -9,
completes after its resume with the running time it had left."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.api.test_reclaim import kill
from tests.api.test_run_control import LOOKUP, command, sdk, settled, started
from tests.conftest import start_server

# A turn still running after this long never ends: the test fails, not hangs.
NEVER_ENDS = 60.0
# The deadline of a turn stopped by SIGTERM outlasts the drain (at most a few seconds),
# so that it passes while corebox is down; after kill -9 it may be short.
DEADLINES = {signal.SIGTERM: 8, signal.SIGKILL: 2}


def latest(client: OpenAI, session_id: str) -> Any:
    return client.beta.agents.sessions.turns.list(session_id, limit=1).data[0]


def ended(client: OpenAI, session_id: str) -> Any:
    """The session's latest turn once it ended."""
    give_up = time.monotonic() + NEVER_ENDS
    while True:
        turn = latest(client, session_id)
        if turn.status in ("completed", "failed", "cancelled"):
            return turn
        assert time.monotonic() < give_up, f"turn {turn.id} is still {turn.status}"
        threading.Event().wait(0.05)


def running(client: OpenAI, deadline: int, waits: bool) -> str:
    """A session whose one turn is running (sleeping in a directive, or waiting for a
    function result when `waits`) under `deadline`; returned once the turn's checkpoint
    there is recorded, from which a restart continues it."""
    config: dict[str, Any] = {"model": "scripted"}
    script = "/sleep 60000\n/say late"
    boundary = "between_model_calls"
    if waits:
        config["tools"] = [LOOKUP]
        script = "/call lookup {}\n/say late"
        boundary = "awaiting_function_result"
    session = client.beta.agents.sessions.create(
        agent=config,  # type: ignore[arg-type]
        environment={"type": "none"},
        input=script,
        extra_body={"x_corebox": {"turn_deadline_seconds": deadline}},
    )
    give_up = time.monotonic() + NEVER_ENDS
    while True:
        checkpoint = dict(latest(client, session.id).x_corebox).get("checkpoint")
        if checkpoint is not None and checkpoint["boundary"] == boundary:
            return session.id
        assert time.monotonic() < give_up, "the turn never reached its checkpoint"
        threading.Event().wait(0.02)


@pytest.mark.parametrize("waits", [False, True], ids=["sleeping", "waiting_for_a_result"])
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "kill_9"])
def test_a_deadline_that_passed_while_corebox_was_down_fails_the_turn_at_once(
    tmp_path: Path, stop: signal.Signals, waits: bool
) -> None:
    data = tmp_path / "data"
    deadline = DEADLINES[stop]
    server = start_server(data)
    try:
        with sdk(server) as client:
            session_id = running(client, deadline, waits)
            claimed = time.monotonic()
            before = latest(client, session_id)
            assert before.status in ("in_progress", "waiting")
    finally:
        server.process.send_signal(stop)
        server.process.wait(timeout=30)
    # The one timed wait: the deadline passes while corebox is down.
    threading.Event().wait(max(0.0, claimed + deadline + 1 - time.monotonic()))

    restarted = start_server(data, port=server.port)
    try:
        with sdk(restarted) as client:
            turn = ended(client, session_id)
            assert turn.status == "failed", turn
            assert turn.error is not None and turn.error.code == "request_timeout"
            x = dict(turn.x_corebox)  # type: ignore[attr-defined]
            assert x["error_code"] == "turn_deadline_exceeded"
            # Failed where it stood: no worker claimed it again to run it.
            assert x["worker_epoch"] == dict(before.x_corebox)["worker_epoch"]  # type: ignore[attr-defined]
            assert client.beta.agents.sessions.retrieve(session_id).status == "idle"
            items = client.beta.agents.sessions.items.list(session_id, order="asc").data
            texts = [i.content[0].text for i in items if getattr(i, "role", "") == "assistant"]  # type: ignore[union-attr]
            assert "late" not in texts
    finally:
        restarted.stop()


def test_a_pause_stops_the_deadline_across_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    deadline = 4
    server = start_server(data)
    try:
        with sdk(server) as client:
            session_id = started(
                client,
                "/say a\n/sleep 1000\n/say b",
                agent={"model": "scripted"},
                extra_body={"x_corebox": {"turn_deadline_seconds": deadline}},
            )
            claimed = time.monotonic()
            reply = command(server, session_id, "pause")
            assert reply.status_code == 202, reply.body
            assert settled(server, reply.json()["id"])["status"] == "applied"
            paused = latest(client, session_id)
            assert dict(paused.x_corebox)["phase"] == "paused"  # type: ignore[attr-defined]
    finally:
        kill(server)
    # The one timed wait: paused (and down) past the deadline, which is stopped.
    threading.Event().wait(max(0.0, claimed + deadline + 1 - time.monotonic()))

    restarted = start_server(data, port=server.port)
    try:
        with sdk(restarted) as client:
            assert latest(client, session_id).status == "in_progress"
            reply = command(restarted, session_id, "resume")
            assert reply.status_code == 202, reply.body
            turn = ended(client, session_id)
            assert turn.status == "completed", turn.error
            items = client.beta.agents.sessions.items.list(session_id, order="asc").data
            texts = [i.content[0].text for i in items if getattr(i, "role", "") == "assistant"]  # type: ignore[union-attr]
            assert texts == ["a", "b"]
    finally:
        restarted.stop()

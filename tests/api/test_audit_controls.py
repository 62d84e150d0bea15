"""Seed 003's control plane seen from outside: the official SDK's event stream and the
`/x/v1` command resources of a real `corebox serve`.

- A control phase change of a running turn (`pause_requested`, `pausing`, `paused`,
  `resuming`) reaches the session's stream as a `turn.in_progress` event carrying the
  turn's snapshot, in the order the state machine moved, through the SDK's strict
  event validation.
- A drain announces each turn it stops (`resuming`) on the stream.
- A command that was accepted and whose turn ended before it applied is `expired`,
  its reason naming how the turn ended; a command submitted to an ended turn is
  `rejected` (`terminal`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openai import OpenAI

from allinone.credentials import read_core_key
from tests.api.support import Surface, surface
from tests.api.test_run_control import call, command, run_state, sdk, settled, start
from tests.conftest import Server, start_server

__all__ = ["surface"]


def phases_until(client: OpenAI, session_id: str, last: str, act: Any) -> list[str | None]:
    """Open the session's stream, call `act()`, then collect the phases the stream's
    `turn.in_progress` events carry until one says `last`."""
    seen: list[str | None] = []
    with client.beta.agents.sessions.events.stream(session_id) as live:
        act()
        for event in live:
            if event.type == "agent.session.turn.in_progress":
                phase = event.turn.x_corebox["phase"]  # type: ignore[attr-defined]
                seen.append(phase)
                if phase == last:
                    return seen
    raise AssertionError(f"the stream ended before phase {last}: {seen}")


def test_pause_and_resume_move_the_turn_on_the_stream(client: OpenAI, surface: Surface) -> None:
    server = surface.server
    session_id = start(client, "/say a\n/hang")
    replies: list[Any] = []

    def pause() -> None:
        replies.append(command(server, session_id, "pause"))

    assert phases_until(client, session_id, "paused", pause) == [
        "pause_requested",
        "pausing",
        "paused",
    ]
    assert settled(server, replies[0].json()["id"])["status"] == "applied"
    paused = run_state(client, session_id)
    version = paused["state_version"]

    def resume() -> None:
        replies.append(command(server, session_id, "resume", expected_state_version=version))

    seen: list[str | None] = []
    with client.beta.agents.sessions.events.stream(session_id) as live:
        resume()
        for event in live:
            if event.type == "agent.session.turn.in_progress":
                state = event.turn.x_corebox  # type: ignore[attr-defined]
                seen.append(state["phase"])
                if state["worker_epoch"] > paused["worker_epoch"]:
                    break
    # Resume requested, then re-claimed by a new worker (a new epoch) that runs it.
    assert seen == ["resuming", "running"]
    assert settled(server, replies[1].json()["id"])["status"] == "applied"
    cancel = command(server, session_id, "cancel")
    assert settled(server, cancel.json()["id"])["status"] == "applied"


def drain(server: Server) -> None:
    reply = call(server, "POST", "/core/v1/drain", {}, bearer=read_core_key(server.data_dir))
    assert reply.status_code == 202, reply.body


def test_a_command_whose_turn_ended_before_it_applied_expires(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data")
    try:
        with sdk(server) as client:
            session_id = start(client, "/say a\n/hang")
            # A drain stops the turn at its checkpoint and claims nothing afterwards, so
            # a resume stays accepted until something else ends the turn.
            assert phases_until(client, session_id, "resuming", lambda: drain(server)) == [
                "pausing",
                "resuming",
            ]
            pause = command(server, session_id, "pause")
            assert pause.json()["status"] == "applied"
            version = run_state(client, session_id)["state_version"]
            resume = command(server, session_id, "resume", expected_state_version=version)
            assert resume.json()["status"] == "accepted"
            assert run_state(client, session_id)["phase"] == "resuming"
            cancel = command(server, session_id, "cancel")
            assert cancel.json()["status"] == "applied"
            assert run_state(client, session_id)["status"] == "cancelled"
            expired = call(server, "GET", f"/x/v1/commands/{resume.json()['id']}").json()
            assert (expired["status"], expired["reason"]) == ("expired", "turn_cancelled")
            late = command(server, session_id, "resume", turn_id=cancel.json()["turn_id"])
            assert (late.json()["status"], late.json()["reason"]) == ("rejected", "terminal")
            listed = call(server, "GET", f"/x/v1/sessions/{session_id}/commands").json()
            assert [(c["action"], c["status"]) for c in listed["data"]] == [
                ("pause", "applied"),
                ("resume", "expired"),
                ("cancel", "applied"),
                ("resume", "rejected"),
            ]
    finally:
        server.stop()

"""Seed 003's control plane seen from outside: the official SDK's event stream and the
`/x/v1` command resources of a real `corebox serve`.

- A control phase change of a running turn (`pause_requested`, `pausing`, `paused`,
  `resuming`) reaches the session's stream as a `turn.in_progress` event carrying the
  turn's snapshot, in the order the state machine moved, through the SDK's strict
  event validation.
- A drain announces each turn it stops (`resuming`) on the stream.
- A fork keeps every configuration revision of its parent under the same numbers, and
  its own updates continue the count.
- A rollback of a pointer that does not exist is 404, of one with nothing earlier 409
  `no_earlier_version`.
- A command that was accepted and whose turn ended before it applied is `expired`,
  its reason naming how the turn ended; a command submitted to an ended turn is
  `rejected` (`terminal`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openai import OpenAI

from allinone.credentials import read_core_key
from tests.api.support import Surface, surface, unchanged
from tests.api.test_agent_versions import run_turn, send_and_settle, x
from tests.api.test_run_control import call, command, run_state, sdk, settled, start
from tests.conftest import Server, start_server
from tests.support.databases import location, raw

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


def revisions_of(server: Server, session_id: str) -> list[tuple[int, str]]:
    """(revision, digest) of a session's configuration revisions, read from its database."""
    with raw(location(server.data_dir), read_only=True) as db:
        rows = db.execute(
            "SELECT revision, digest FROM session_revisions WHERE session_id = ? ORDER BY revision",
            (session_id,),
        )
    return [(int(r[0]), str(r[1])) for r in rows]


def test_a_fork_keeps_the_configuration_revisions_it_pins(client: OpenAI, surface: Surface) -> None:
    session, _ = run_turn(client, agent={"model": "scripted"})
    client.beta.agents.sessions.update(session.id, agent={"service_tier": "flex"})
    send_and_settle(client, session.id, "x")
    parent = revisions_of(surface.server, session.id)
    assert [r for r, _ in parent] == [1, 2]
    fork = client.post(
        f"{surface.server.base_url}/x/v1/sessions/{session.id}/fork", cast_to=object, body={}
    )
    fork_id = fork["id"]  # type: ignore[index]
    assert fork["x_corebox"]["config_revision"] == 2  # type: ignore[index]
    assert revisions_of(surface.server, fork_id) == parent
    client.beta.agents.sessions.update(fork_id, agent={"service_tier": "auto"})
    send_and_settle(client, fork_id, "y")
    revisions = revisions_of(surface.server, fork_id)
    assert revisions[:2] == parent and [r for r, _ in revisions] == [1, 2, 3]
    last = client.beta.agents.sessions.turns.list(fork_id, limit=1).data[0]
    assert last.x_corebox["config_digest"] == revisions[2][1]  # type: ignore[attr-defined]
    assert revisions_of(surface.server, session.id) == parent  # the parent is unchanged


def test_a_rollback_names_what_it_cannot_do(client: OpenAI, surface: Surface) -> None:
    """A pointer that never existed is 404; one with nothing earlier is 409 with its own
    code; neither writes anything."""
    agent = client.beta.agents.create(model="scripted", instructions="one")
    base = f"/x/v1/agents/{agent.id}/deployments"
    with unchanged(surface.server.data_dir):
        status, body = x(surface, "POST", f"{base}/production/rollback", {})
        assert status == 404 and body["error"]["param"] == "deployment"
        status, body = x(surface, "POST", f"{base}/production/rollback", {"version": 1})
        assert status == 404
        status, body = x(surface, "POST", f"{base}/latest/rollback", {})
        assert status == 409 and body["error"]["code"] == "no_earlier_version"

"""Drain (seed 003): `POST /core/v1/drain` or SIGTERM stops claiming new turns,
`/readyz` answers 503 `draining`, running turns stop at their next checkpoint, and a
later start continues them."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from openai import OpenAI

from allinone.credentials import read_core_key
from tests.api.test_run_control import (
    assistant,
    call,
    run_state,
    sdk,
    start,
    wait_idle,
)
from tests.conftest import Server, start_server
from tests.support import databases

SCRIPT = "/say a\n/sleep 1500\n/say b"


@contextmanager
def serving(data: Path, port: int | None = None, *, sigterm: bool = False) -> Iterator[Server]:
    """A server on `data` (on `port`, to start again where a client found it before),
    stopped when the block ends: by SIGTERM, which drains it and must exit 0, or as
    tests usually stop one."""
    server = start_server(data, port=port)
    try:
        yield server
    finally:
        if sigterm:
            server.process.send_signal(signal.SIGTERM)
            assert server.process.wait(timeout=30) == 0
        else:
            server.stop()


def test_a_drained_turn_stops_at_a_checkpoint_and_a_later_start_continues_it(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with serving(data, sigterm=True) as server, sdk(server) as client:
        session_id = start(client, SCRIPT)
        before = run_state(client, session_id)
        core = read_core_key(data)
        drained = call(server, "POST", "/core/v1/drain", {}, bearer=core)
        assert drained.status_code == 202, drained.body
        ready = call(server, "GET", "/readyz", bearer=core)
        assert ready.status_code == 503 and ready.json()["status"] == "draining"
        while run_state(client, session_id)["phase"] != "resuming":
            pass  # suspended at its checkpoint: no lease, no worker
        queued = client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="later"
        )
        assert run_state(client, queued.id)["status"] == "queued"  # nothing is claimed

    with serving(data, server.port) as restarted, sdk(restarted) as client:
        wait_idle(client, session_id)
        after = run_state(client, session_id)
        assert after["status"] == "completed"
        assert after["worker_epoch"] > before["worker_epoch"]
        assert assistant(client, session_id) == ["a", "b"]
        wait_idle(client, queued.id)
        assert assistant(client, queued.id) == ["later"]


def test_sigterm_drains_a_running_turn_and_the_next_start_continues_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serving(data, sigterm=True) as server, sdk(server) as client:
        session_id = start(client, SCRIPT)
    # Stopped at its checkpoint by the drain, not abandoned mid-run: no lease, no worker.
    with databases.raw(databases.location(data)) as db:
        [(phase, lease)] = [
            tuple(row)
            for row in db.execute(
                "SELECT phase, lease_expires_at FROM turns WHERE session_id = ?", (session_id,)
            )
        ]
    assert (phase, lease) == ("resuming", None)

    with serving(data, server.port) as restarted, sdk(restarted) as client:
        wait_idle(client, session_id)
        assert run_state(client, session_id)["status"] == "completed"
        assert assistant(client, session_id) == ["a", "b"]


def test_a_pause_kill_switch_holds_a_queued_turn_that_runs_once_it_is_cleared(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with serving(data, sigterm=True) as server, sdk(server) as client:
        core = read_core_key(data)
        assert call(server, "POST", "/core/v1/drain", {}, bearer=core).status_code == 202
        queued = client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="later"
        )
        assert run_state(client, queued.id)["status"] == "queued"  # nothing is claimed
        projects = call(server, "GET", "/core/v1/projects", bearer=core).json()["data"]
        body = {"kind": "kill_switch", "value": "pause", "reason": "hold"}
        body["project_id"] = projects[0]["id"]
        kill = call(server, "POST", "/core/v1/overlays", body, bearer=core)
        assert kill.status_code == 200, kill.body
        cleared = call(server, "DELETE", f"/core/v1/overlays/{kill.json()['id']}", bearer=core)
        assert cleared.status_code == 200, cleared.body
        # Held while the switch was on, not paused: nothing keeps it once it is cleared.
        commands = call(server, "GET", f"/x/v1/sessions/{queued.id}/commands").json()
        assert commands["data"] == []
        assert run_state(client, queued.id)["phase"] is None

    with serving(data, server.port) as restarted, sdk(restarted) as client:
        wait_idle(client, queued.id)
        assert assistant(client, queued.id) == ["later"]


def _reclaimed_or_paused(client: OpenAI, session_id: str) -> dict[str, Any]:
    """The turn's run state once a start re-claimed it (phase `waiting`) or left it
    `paused`."""
    while (state := run_state(client, session_id))["phase"] not in ("waiting", "paused"):
        pass
    return state


def test_a_turn_waiting_for_a_result_waits_through_every_drain_and_the_result_ends_it(
    tmp_path: Path,
) -> None:
    # Each stop drains the turn at the checkpoint it waits at; each start re-claims it
    # waiting. The second drain, of a Run resumed into its wait, once left it on its way
    # to a pause no one asked for, and the next start paused it.
    data = tmp_path / "data"
    tool = {"type": "function", "name": "lookup", "description": "d", "parameters": {}}
    with serving(data, sigterm=True) as server, sdk(server) as client:
        session_id = client.beta.agents.sessions.create(
            agent={"model": "scripted", "tools": [tool]},  # type: ignore[list-item]
            environment={"type": "none"},
            input='/call lookup {"q": 1}\n/say got {result}',
        ).id
        while run_state(client, session_id)["status"] != "waiting":
            pass
        epochs = [run_state(client, session_id)["worker_epoch"]]
    for _ in range(2):
        with serving(data, server.port, sigterm=True) as server, sdk(server) as client:
            state = _reclaimed_or_paused(client, session_id)
            assert (state["status"], state["phase"]) == ("waiting", "waiting"), state
            epochs.append(state["worker_epoch"])
    with serving(data, server.port) as server, sdk(server) as client:
        state = _reclaimed_or_paused(client, session_id)
        assert (state["status"], state["phase"]) == ("waiting", "waiting"), state
        assert epochs == sorted(set(epochs)) and state["worker_epoch"] > epochs[-1]
        action = client.beta.agents.sessions.retrieve(session_id).required_actions[0]
        result = {
            "type": "agent.session.input.tool_result",
            "turn_id": action.turn_id,  # type: ignore[union-attr]
            "call_id": action.call_id,  # type: ignore[union-attr]
            "success": True,
            "output": "42",
        }
        client.beta.agents.sessions.events.create(session_id, events=[result])  # type: ignore[list-item]
        wait_idle(client, session_id)
        assert assistant(client, session_id) == ["got 42"]
        assert call(server, "GET", f"/x/v1/sessions/{session_id}/commands").json()["data"] == []

"""A session updated while its turn is paused (seed 003: a Run that has started keeps
its pinned configuration): the resume continues the turn from its checkpoint on the
configuration its Run started with, the budget as it is now applies to it, and the next
turn runs the new configuration; the same after a kill -9 between the update and the
resume, and for a running turn re-claimed after a kill -9 that followed an update."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from openai import OpenAI

from tests.api.test_reclaim import kill
from tests.api.test_run_control import (
    LOOKUP,
    NEVER_SETTLES,
    answer,
    assistant,
    command,
    run_state,
    sdk,
    settled,
    started,
    wait_idle,
)
from tests.conftest import Server, start_server
from tests.support.sdk import send_and_settle


def paused(server: Server, client: OpenAI, session_id: str) -> None:
    reply = command(server, session_id, "pause")
    assert reply.status_code == 202, reply.body
    assert settled(server, reply.json()["id"])["status"] == "applied"
    assert run_state(client, session_id)["phase"] == "paused"


def resumed(server: Server, client: OpenAI, session_id: str) -> dict[str, Any]:
    """Resume the paused turn and wait for the session to be idle; the turn's state."""
    reply = command(server, session_id, "resume")
    assert reply.status_code == 202, reply.body
    assert settled(server, reply.json()["id"])["status"] == "applied"
    wait_idle(client, session_id)
    return run_state(client, session_id)


def wait_action(client: OpenAI, session_id: str) -> Any:
    """The session's required action, once it has one."""
    with client.beta.agents.sessions.events.stream(session_id) as live:
        session = client.beta.agents.sessions.retrieve(session_id)
        if session.status == "requires_action":
            return session.required_actions[0]  # type: ignore[attr-defined]
        for event in live:
            if event.type == "agent.session.requires_action":
                return event.session.required_actions[0]  # type: ignore[attr-defined]
    raise AssertionError("the session's event stream ended")


# Each Run of the scripted harness reports its own usage: 30 tokens before the pause,
# 70 by the resumed Run.
BUDGETED = "/usage 20 10\n/say a\n/sleep 1000\n/usage 40 30\n/say b"


def test_a_paused_turn_resumes_under_the_budget_as_it_is_now(server: Server) -> None:
    with sdk(server) as client:
        raised = started(client, BUDGETED, agent={"model": "scripted"}, spend_control={"limit": 50})
        paused(server, client, raised)
        digest = run_state(client, raised)["config_digest"]
        client.beta.agents.sessions.update(raised, spend_control={"limit": 1000})
        state = resumed(server, client, raised)
        assert state["status"] == "completed", state
        assert assistant(client, raised) == ["a", "b"]
        assert state["config_digest"] == digest  # the pinned configuration
        following = send_and_settle(client, raised, "again")
        assert following.status == "completed"
        assert following.x_corebox["config_digest"] != digest  # type: ignore[attr-defined]

        lowered = started(
            client,
            BUDGETED.replace("/say b", "/hang"),
            agent={"model": "scripted"},
            spend_control={"limit": 1000},
        )
        paused(server, client, lowered)
        client.beta.agents.sessions.update(lowered, spend_control={"limit": 50})
        state = resumed(server, client, lowered)
        assert (state["status"], state["error_code"]) == ("failed", "session_budget_exceeded")
        assert assistant(client, lowered) == ["a"]


def test_a_paused_turn_whose_budget_was_used_up_fails_on_resume(server: Server) -> None:
    """The check before the re-claim refuses it, as it refuses a turn about to start:
    the turn fails, and the resume expires with it."""
    with sdk(server) as client:
        session_id = started(
            client, BUDGETED, agent={"model": "scripted"}, spend_control={"limit": 1000}
        )
        paused(server, client, session_id)
        client.beta.agents.sessions.update(session_id, spend_control={"limit": 10})
        reply = command(server, session_id, "resume")
        assert reply.status_code == 202, reply.body
        outcome = settled(server, reply.json()["id"])
        assert (outcome["status"], outcome["reason"]) == ("expired", "turn_failed")
        wait_idle(client, session_id)
        state = run_state(client, session_id)
        assert (state["status"], state["error_code"]) == ("failed", "session_budget_exceeded")
        assert assistant(client, session_id) == ["a"]


def test_a_limit_first_set_while_paused_applies_to_the_resumed_turn(server: Server) -> None:
    """The resumed Run's usage reports are checked against the limit the session has
    now, though the configuration the turn is pinned to had none."""
    with sdk(server) as client:
        session_id = started(
            client, BUDGETED.replace("/say b", "/hang"), agent={"model": "scripted"}
        )
        paused(server, client, session_id)
        client.beta.agents.sessions.update(session_id, spend_control={"limit": 50})
        reply = command(server, session_id, "resume")
        assert settled(server, reply.json()["id"])["status"] == "applied"
        state = ended(client, session_id)
        assert (state["status"], state["error_code"]) == ("failed", "session_budget_exceeded")


def ended(client: OpenAI, session_id: str) -> dict[str, Any]:
    """The state of the session's newest turn once it ended."""
    give_up = time.monotonic() + NEVER_SETTLES
    while True:
        state = run_state(client, session_id)
        if state["status"] in ("completed", "failed", "cancelled"):
            return state
        assert time.monotonic() < give_up, f"the turn has not ended: {state}"
        time.sleep(0.02)


def test_a_paused_turn_keeps_its_tools_when_the_session_drops_them(server: Server) -> None:
    with sdk(server) as client:
        session_id = started(
            client,
            "/say a\n/sleep 1000\n/call lookup {}\n/say got {result}",
            agent={"model": "scripted", "tools": [LOOKUP]},
        )
        paused(server, client, session_id)
        client.beta.agents.sessions.update(session_id, agent={"tools": []})
        reply = command(server, session_id, "resume")
        assert settled(server, reply.json()["id"])["status"] == "applied"
        action = wait_action(client, session_id)
        assert action.name == "lookup"
        answer(client, session_id, action)
        wait_idle(client, session_id)
        assert run_state(client, session_id)["status"] == "completed"
        assert assistant(client, session_id) == ["a", "got 7"]
        # The next turn runs without the tool.
        following = send_and_settle(client, session_id, "/call lookup {}")
        assert following.status == "failed"
        assert following.error is not None and "undeclared" in following.error.message


def test_an_update_then_kill_9_leaves_the_turn_to_resume_on_its_pin(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_server(data)
    try:
        with sdk(server) as client:
            held = started(
                client, BUDGETED, agent={"model": "scripted"}, spend_control={"limit": 50}
            )
            paused(server, client, held)
            client.beta.agents.sessions.update(held, spend_control={"limit": 1000})
            running = started(client, "/say a\n/sleep 3000\n/say b", agent={"model": "scripted"})
            pinned = run_state(client, running)["config_digest"]
            client.beta.agents.sessions.update(running, agent={"tools": [LOOKUP]})
    finally:
        kill(server)

    restarted = start_server(data, port=server.port)
    try:
        with sdk(restarted) as client:
            # The running turn was re-claimed at its checkpoint on its pinned configuration.
            wait_idle(client, running)
            state = run_state(client, running)
            assert state["status"] == "completed", state
            assert assistant(client, running) == ["a", "b"]
            assert state["config_digest"] == pinned
            assert run_state(client, held)["phase"] == "paused"
            state = resumed(restarted, client, held)
            assert state["status"] == "completed", state
            assert assistant(client, held) == ["a", "b"]
    finally:
        restarted.stop()

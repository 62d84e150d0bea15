"""Safety overlays, set by the owner over `/core/v1/overlays` and seen through the
official SDK: a kill switch ends active turns and refuses new input until cleared, a
disabled tool answers the model with a structured `tool_disabled` result naming the
overlay version, and `egress: loopback_only` fails a turn whose model is not on a
loopback address before any connection. Every overlay shows on the session and in the
owner's `/readyz` evidence."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from runtime.confinement import landlock_abi
from tests.api.support import Surface, surface, until
from tests.support.model_server import MODEL, ModelServer, Reply

__all__ = ["surface"]

TURN_ENDS = (
    "agent.session.turn.cancelled",
    "agent.session.turn.failed",
    "agent.session.turn.completed",
)
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def message(text: str) -> dict[str, Any]:
    return {
        "type": "agent.session.input.message",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}],
    }


def overlay(surface: Surface, project_id: str, kind: str, value: Any, **extra: Any) -> Any:
    body = {"kind": kind, "project_id": project_id, "value": value, "reason": "test", **extra}
    status, created = surface.core("POST", "/core/v1/overlays", body)
    assert status == 200, created
    return created


def test_a_cancel_kill_switch_ends_turns_and_refuses_input_until_cleared(
    surface: Surface,
) -> None:
    project_id, key = surface.project()
    client = surface.client(key)
    live = iter(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="/hang", stream=True
        )
    )
    session = next(live).session  # type: ignore[attr-defined]
    for event in live:
        if event.type == "agent.session.turn.in_progress":
            break
    kill = overlay(surface, project_id, "kill_switch", "cancel")
    ended = next(e.type for e in live if e.type in TURN_ENDS)
    assert ended == "agent.session.turn.cancelled"

    with pytest.raises(openai.ConflictError) as caught:
        client.beta.agents.sessions.events.create(session.id, events=[message("more")])  # type: ignore[list-item]
    assert caught.value.code == "kill_switch_active"
    shown = client.beta.agents.sessions.retrieve(session.id).x_corebox["overlays"]  # type: ignore[attr-defined]
    assert [(o["id"], o["value"], o["actor"]) for o in shown] == [(kill["id"], "cancel", "core")]
    status, ready = surface.core("GET", "/readyz")
    assert kill["id"] in [o["id"] for o in ready["checks"]["overlays"]["active"]]

    status, cleared = surface.core("DELETE", f"/core/v1/overlays/{kill['id']}")
    assert (status, cleared["cleared_by"]) == (200, "core")
    assert cleared["version"] == kill["version"]
    with client.beta.agents.sessions.events.stream(session.id) as live:
        client.beta.agents.sessions.events.create(session.id, events=[message("again")])  # type: ignore[list-item]
        for event in live:
            if event.type == "agent.session.idle":
                break
    turn = client.beta.agents.sessions.turns.list(session.id, limit=1).data[0]
    assert turn.status == "completed"
    status, history = surface.core("GET", "/core/v1/overlays?all=true")
    assert kill["id"] in [o["id"] for o in history["data"]]


def test_a_pause_kill_switch_pauses_running_turns_by_a_pause_command(surface: Surface) -> None:
    project_id, key = surface.project()
    client = surface.client(key)
    live = iter(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "none"},
            input="/say a\n/sleep 1500\n/say b\n/sleep 1500\n/say c",
            stream=True,
        )
    )
    session = next(live).session  # type: ignore[attr-defined]
    for event in live:
        if event.type == "agent.session.turn.output_text.done":
            break
    kill = overlay(surface, project_id, "kill_switch", "pause")
    root = surface.server.base_url
    listed = client.get(f"{root}/x/v1/sessions/{session.id}/commands", cast_to=object)
    (command,) = listed["data"]  # type: ignore[index]
    assert (command["action"], command["actor"], command["reason"]) == (
        "pause",
        "kill_switch",
        "kill switch",
    )
    # The pause applies at the turn's next safe point; the turn then holds no lease.
    while command["status"] == "accepted":
        command = client.get(f"{root}/x/v1/commands/{command['id']}", cast_to=object)
    assert command["status"] == "applied"
    assert command["reason"] == "kill switch"  # applying keeps the reason it was given
    turn = client.beta.agents.sessions.turns.list(session.id, limit=1).data[0]
    assert turn.x_corebox["phase"] == "paused"  # type: ignore[attr-defined]
    status, _ = surface.core("DELETE", f"/core/v1/overlays/{kill['id']}")
    assert status == 200
    # Lifting the switch accepts new input again; the turn it paused stays paused until
    # someone resumes or cancels it, and a cancel ends it.
    turn = client.beta.agents.sessions.turns.list(session.id, limit=1).data[0]
    assert turn.x_corebox["phase"] == "paused"  # type: ignore[attr-defined]
    cancel = send(client, session.id, "cancel")
    assert cancel["status"] == "applied"  # type: ignore[index]
    turn = client.beta.agents.sessions.turns.list(session.id, limit=1).data[0]
    assert turn.status == "cancelled"


def running(client: Any, script: str) -> Any:
    """A session whose turn runs `script`, once its first text is out."""
    live = iter(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input=script, stream=True
        )
    )
    session = next(live).session
    next(e for e in live if e.type == "agent.session.turn.output_text.done")
    return session


def commands_path(client: Any, session_id: str) -> str:
    """The session's `/x/v1` commands, on the server `client` talks to."""
    return f"{str(client.base_url).removesuffix('/v1/')}/x/v1/sessions/{session_id}/commands"


def send(client: Any, session_id: str, action: str) -> Any:
    """A command to the session's active turn, as its owner sends it; the command."""
    return client.post(commands_path(client, session_id), body={"action": action}, cast_to=object)


def _applied(client: Any, root: str, command: Any) -> Any:
    while command["status"] == "accepted":
        command = client.get(f"{root}/x/v1/commands/{command['id']}", cast_to=object)
    return command


def test_clearing_a_pause_kill_switch_with_resume_resumes_only_the_turns_it_paused(
    surface: Surface,
) -> None:
    project_id, key = surface.project()
    client = surface.client(key)
    root = surface.server.base_url
    script = "/say a\n/sleep 1500\n/say b"
    held, own = running(client, script), running(client, script)
    # The owner of `own` pauses it first: the kill switch's pause of it is then refused.
    mine = send(client, own.id, "pause")
    assert _applied(client, root, mine)["status"] == "applied"
    tool = overlay(surface, project_id, "tool_disabled", "run_command")
    kill = overlay(surface, project_id, "kill_switch", "pause")
    for session, status in ((held, "applied"), (own, "rejected")):
        listed = client.get(f"{root}/x/v1/sessions/{session.id}/commands", cast_to=object)
        [sent] = [c for c in listed["data"] if c["actor"] == "kill_switch"]  # type: ignore[index]
        assert _applied(client, root, sent)["status"] == status

    # Only a pause kill switch resumes; refused as bad input, it stays set.
    for overlay_id, code in ((tool["id"], 400), ("ovl_nothing", 404)):
        status, error = surface.core("DELETE", f"/core/v1/overlays/{overlay_id}?resume=true")
        assert status == code, error
    status, error = surface.core("DELETE", f"/core/v1/overlays/{kill['id']}?resume=maybe")
    assert (status, error["error"]["param"]) == (400, "resume")
    active = surface.core("GET", "/core/v1/overlays")[1]["data"]
    assert {o["id"] for o in active} >= {tool["id"], kill["id"]}

    status, cleared = surface.core("DELETE", f"/core/v1/overlays/{kill['id']}?resume=true")
    assert status == 200 and cleared["cleared_at"] is not None, cleared
    [resumed] = cleared["resumed"]
    turn = client.beta.agents.sessions.turns.list(held.id, limit=1).data[0]
    assert (resumed["action"], resumed["actor"], resumed["turn_id"]) == (
        "resume",
        "kill_switch",
        turn.id,
    )
    until(lambda: client.beta.agents.sessions.turns.list(held.id).data[0].status == "completed", 60)
    # The turn its own owner paused stays paused (then cancelled: the server is shared).
    turn = client.beta.agents.sessions.turns.list(own.id, limit=1).data[0]
    assert turn.x_corebox["phase"] == "paused"  # type: ignore[attr-defined]
    cancel = send(client, own.id, "cancel")
    assert cancel["status"] == "applied"  # type: ignore[index]


def pausing(surface: Surface, tmp_path: Any) -> tuple[Any, Any, Any, Any]:
    """(client, session, its live stream, the kill switch) for a turn that a pause kill
    switch is pausing: the Run reaches its next checkpoint only once its command ends,
    so the pause stays under way (`pause_requested`, `pausing`) for seconds."""
    project_id, key = surface.project()
    status, _ = surface.core(
        "POST",
        f"/core/v1/projects/{project_id}/host_grants/workspace_roots",
        {"path": str(tmp_path)},
    )
    assert status == 200
    client = surface.client(key)
    live = iter(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "self_hosted", "workspace_directory": str(tmp_path)},
            input="/exec sleep 4\n/say done",
            stream=True,
        )
    )
    session = next(live).session
    for event in live:
        if event.type == "agent.session.turn.item.added" and event.item.type == "command_execution":
            break
    kill = overlay(surface, project_id, "kill_switch", "pause")
    turn = client.beta.agents.sessions.turns.list(session.id, limit=1).data[0]
    assert turn.x_corebox["phase"] in ("pause_requested", "pausing")
    return client, session, live, kill


def phases_to_the_end(live: Iterator[Any]) -> tuple[list[str], str]:
    """The turn's phases on the stream until it ends or stands paused, and how it ended
    (`paused` if it did not)."""
    phases: list[str] = []
    for event in live:
        if event.type in TURN_ENDS:
            return phases, event.type
        if event.type == "agent.session.turn.in_progress":
            phases.append(event.turn.x_corebox["phase"])
            if phases[-1] == "paused":
                return phases, "paused"
    raise AssertionError("the stream ended first")


def commands_of(client: Any, session_id: str) -> list[tuple[str, str, str]]:
    """(actor, action, status) of the session's commands, oldest first; a client's actor
    (its key's id) as `key`."""
    listed = client.get(commands_path(client, session_id), cast_to=object)
    return [
        ("key" if c["actor"].startswith("key_") else c["actor"], c["action"], c["status"])
        for c in listed["data"]
    ]


def test_a_turn_still_pausing_when_its_kill_switch_is_cleared_with_resume_runs_on(
    surface: Surface, tmp_path: Any
) -> None:
    client, session, live, kill = pausing(surface, tmp_path)
    # A client's resume of a turn on its way to a pause is refused, as before.
    mine = send(client, session.id, "resume")
    assert (mine["status"], mine["reason"]) == ("rejected", "not_paused")  # type: ignore[index]

    # The kill switch's resume is accepted: once the Run stops at its checkpoint, the turn
    # is re-claimed at once and runs on.
    status, cleared = surface.core("DELETE", f"/core/v1/overlays/{kill['id']}?resume=true")
    assert status == 200, cleared
    [resumed] = cleared["resumed"]
    assert (resumed["turn_id"], resumed["status"]) == (mine["turn_id"], "accepted"), resumed  # type: ignore[index]
    phases, ended = phases_to_the_end(live)
    assert ended == "agent.session.turn.completed", phases
    assert phases[-2:] == ["resuming", "running"] and "paused" not in phases, phases
    assert commands_of(client, session.id) == [
        ("kill_switch", "pause", "applied"),
        ("key", "resume", "rejected"),
        ("kill_switch", "resume", "applied"),
    ]


def test_a_pause_asked_after_a_kill_switch_resume_still_pauses_the_turn(
    surface: Surface, tmp_path: Any
) -> None:
    client, session, live, kill = pausing(surface, tmp_path)
    status, cleared = surface.core("DELETE", f"/core/v1/overlays/{kill['id']}?resume=true")
    assert status == 200 and [c["status"] for c in cleared["resumed"]] == ["accepted"], cleared
    mine = send(client, session.id, "pause")
    assert mine["status"] == "accepted"  # type: ignore[index]
    # The newest word is the owner's pause: the turn stands paused at its checkpoint.
    phases, ended = phases_to_the_end(live)
    assert (ended, "resuming" in phases) == ("paused", False), phases
    cancel = send(client, session.id, "cancel")
    assert cancel["status"] == "applied"  # type: ignore[index]
    assert commands_of(client, session.id) == [
        ("kill_switch", "pause", "applied"),
        ("kill_switch", "resume", "expired"),
        ("key", "pause", "applied"),
        ("key", "cancel", "applied"),
    ]


def test_a_disabled_tool_answers_tool_disabled_and_the_call_and_answer_are_items(
    surface: Surface, model: ModelServer
) -> None:
    project_id, key = surface.project()
    client = surface.client(key)
    provider = {"protocol": "chat_completions", "base_url": model.base_url, "api_key": "sk-x"}
    disabled = overlay(surface, project_id, "tool_disabled", "get_weather")
    model.queue(Reply.call("get_weather", {"city": "Paris"}), Reply.say("It is disabled."))
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": MODEL, "tools": [WEATHER]},  # type: ignore[list-item]
            environment={"type": "none"},
            input="Weather?",
            stream=True,
            extra_body={"x_corebox": {"model_provider": provider}},
        )
    )
    session_id = events[0].session.id  # type: ignore[union-attr]
    # The model is answered tool_disabled, with the overlay's version...
    refusal = {
        "error": "tool_disabled",
        "tool": "get_weather",
        "overlay_version": disabled["version"],
    }
    output = model.requests[-1].body["messages"][-1]
    assert output["role"] == "tool" and json.loads(output["content"]) == refusal
    # ... and the call and that answer are items, in the order the model saw them.
    items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    assert [i.type for i in items] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    call, output = items[1], items[2]
    assert call.type == "function_call" and output.type == "function_call_output"
    assert (call.name, json.loads(str(call.arguments)), call.status) == (
        "get_weather",
        {"city": "Paris"},
        "completed",
    )
    assert (output.call_id, output.status, output.output) == (call.call_id, "failed", None)
    assert json.loads(str(output.error)) == refusal
    assert not events[-1].session.required_actions  # type: ignore[union-attr]
    turn_items = client.beta.agents.sessions.turns.items.list(
        items[1].turn_id, session_id=session_id
    ).data
    assert {call.id, output.id} <= {i.id for i in turn_items}
    streamed = [
        (e.type, e.item.type)  # type: ignore[union-attr]
        for e in events
        if e.type in ("agent.session.turn.item.added", "agent.session.turn.item.done")
        and e.item.type.startswith("function_call")  # type: ignore[union-attr]
    ]
    assert streamed == [
        ("agent.session.turn.item.added", "function_call"),
        ("agent.session.turn.item.done", "function_call"),
        ("agent.session.turn.item.added", "function_call_output"),
    ]


def test_loopback_only_fails_a_turn_on_a_remote_model(surface: Surface) -> None:
    project_id, key = surface.project()
    client = surface.client(key)
    overlay(surface, project_id, "egress", "loopback_only")
    remote = {"protocol": "chat_completions", "base_url": "http://192.0.2.1:9/v1", "api_key": "k"}
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": MODEL},
            environment={"type": "none"},
            input="hi",
            stream=True,
            extra_body={"x_corebox": {"model_provider": remote}},
        )
    )
    session_id = events[0].session.id
    turn = client.beta.agents.sessions.turns.list(session_id, limit=1).data[0]
    assert turn.status == "failed"
    assert turn.x_corebox["error_code"] == "egress_refused"  # type: ignore[attr-defined]


def test_bad_overlays_are_refused(surface: Surface) -> None:
    project_id, _ = surface.project()
    for body, param in [
        ({"kind": "kill_switch", "value": "explode"}, "value"),
        ({"kind": "meteor", "value": "x"}, "kind"),
        ({"kind": "egress", "value": "open"}, "value"),
        ({"kind": "kill_switch", "value": "pause", "reason": ""}, "reason"),
        ({"kind": "kill_switch", "value": "pause", "reason": " "}, "reason"),
        ({"kind": "kill_switch", "value": None}, "value"),
        ({"kind": "tool_disabled", "value": "x" * 65}, "value"),
    ]:
        status, error = surface.core(
            "POST", "/core/v1/overlays", {"project_id": project_id, "reason": "r", **body}
        )
        assert (status, error["error"]["param"]) == (400, param)
    status, _ = surface.core("DELETE", "/core/v1/overlays/ovl_nothing")
    assert status == 404
    status, error = surface.core("GET", "/core/v1/overlays?all=yes")
    assert (status, error["error"]["param"]) == (400, "all")


def test_an_overlay_narrowed_to_an_agent_names_one_its_project_knows(surface: Surface) -> None:
    project_id, key = surface.project()
    client = surface.client(key)
    saved = client.beta.agents.create(model="scripted").id
    gone = client.beta.agents.create(model="scripted").id
    client.beta.agents.delete(gone)
    inline = client.beta.agents.sessions.create(
        agent={"model": "scripted"}, environment={"type": "none"}, input="/say hi"
    ).agent.id
    other_project, other_key = surface.project("other")
    elsewhere = surface.client(other_key).beta.agents.create(model="scripted").id
    # A saved agent, a deleted one (its sessions may still run), a session's inline agent.
    for agent_id in (saved, gone, inline):
        assert overlay(surface, project_id, "kill_switch", "pause", agent_id=agent_id)
    before = surface.core("GET", "/core/v1/overlays?all=true")[1]["data"]
    # An id no one made, and another project's agent: refused, and nothing is set.
    for agent_id in ("agent_0123456789nobody", elsewhere):
        body = {"kind": "kill_switch", "value": "pause", "project_id": project_id}
        status, error = surface.core(
            "POST", "/core/v1/overlays", {**body, "reason": "r", "agent_id": agent_id}
        )
        assert (status, error["error"]["param"]) == (404, "agent_id"), error
        assert agent_id in error["error"]["message"]
    assert overlay(surface, other_project, "kill_switch", "pause", agent_id=elsewhere)
    after = surface.core("GET", "/core/v1/overlays?all=true")[1]["data"]
    assert after[1:] == before and after[0]["project_id"] == other_project


def test_disabling_run_command_mid_turn_answers_the_next_call(
    surface: Surface, model: ModelServer, tmp_path: Any
) -> None:
    project_id, key = surface.project()
    status, _ = surface.core(
        "POST",
        f"/core/v1/projects/{project_id}/host_grants/workspace_roots",
        {"path": str(tmp_path)},
    )
    assert status == 200
    client = surface.client(key)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    provider = {"protocol": "chat_completions", "base_url": model.base_url, "api_key": "sk-x"}
    model.queue(
        Reply.call("run_command", {"command": "echo one"}),
        Reply.call("run_command", {"command": "echo two"}),
        Reply.say("Stopped."),
    )
    live = iter(
        client.beta.agents.sessions.create(
            agent={"model": MODEL},
            environment={"type": "self_hosted", "workspace_directory": str(workspace)},
            input="keep running commands",
            stream=True,
            extra_body={"x_corebox": {"model_provider": provider}},
        )
    )
    session = next(live).session  # type: ignore[attr-defined]
    for event in live:
        if event.type == "agent.session.requires_action":
            action = event.session.required_actions[0]
            break
    disabled = overlay(surface, project_id, "tool_disabled", "run_command")
    client.beta.agents.sessions.events.create(
        session.id,
        events=[
            {
                "type": "agent.session.input.mcp_approval_request_result",
                "request_id": action.request_id,
                "response": {"type": "mcp_tool_call", "decision": "approve"},
            }
        ],
    )
    ended = next(e.type for e in live if e.type in TURN_ENDS)
    assert ended == "agent.session.turn.completed"
    told = [m for m in model.requests[-1].body["messages"] if m["role"] == "tool"]
    assert told[0]["content"] == "exit code 0\none\n"
    assert json.loads(told[1]["content"]) == {
        "error": "tool_disabled",
        "tool": "run_command",
        "overlay_version": disabled["version"],
    }
    items = client.beta.agents.sessions.items.list(session.id, order="asc").data
    assert [i.type for i in items] == [
        "message",
        "command_execution",
        "function_call",
        "function_call_output",
        "message",
    ]
    call, output = items[2], items[3]
    assert call.type == "function_call" and output.type == "function_call_output"
    assert (call.name, json.loads(str(call.arguments))) == ("run_command", {"command": "echo two"})
    assert (output.call_id, output.status) == (call.call_id, "failed")
    assert json.loads(str(output.error)) == json.loads(told[1]["content"])


def test_loopback_only_runs_commands_without_network(
    surface: Surface, model: ModelServer, tmp_path: Any
) -> None:
    if landlock_abi() < 4:
        pytest.skip("network rules need Landlock ABI 4 on this host")
    project_id, key = surface.project()
    status, _ = surface.core(
        "POST",
        f"/core/v1/projects/{project_id}/host_grants/workspace_roots",
        {"path": str(tmp_path)},
    )
    assert status == 200
    client = surface.client(key)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    port = model.base_url.split(":")[-1].split("/")[0]
    connect = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5)'"
    overlay(surface, project_id, "egress", "loopback_only")
    provider = {"protocol": "chat_completions", "base_url": model.base_url, "api_key": "sk-x"}
    model.queue(Reply.call("run_command", {"command": connect}), Reply.say("Offline."))
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": MODEL},
            environment={"type": "self_hosted", "workspace_directory": str(workspace)},
            input="reach the model",
            stream=True,
            extra_body={
                "x_corebox": {
                    "model_provider": provider,
                    "tool_policy": {"run_command": "allow"},
                }
            },
        )
    )
    assert events[-1].type == "agent.session.idle"
    told = model.requests[-1].body["messages"][-1]
    assert told["role"] == "tool"
    assert not told["content"].startswith("exit code 0"), told["content"]
    assert "PermissionError" in told["content"]

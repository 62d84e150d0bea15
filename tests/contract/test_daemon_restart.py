"""Only the Runtime restarts (`corebox daemon` killed, Core stays up): a turn whose
latest checkpoint has nothing in flight is re-claimed by the new daemon with a new
worker epoch and completes; nothing is replayed."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from tests.contract.test_remote_runtime import (
    WAIT,
    new_device,
    sdk,
    serve_core_only,
    start_daemon,
)

LOOKUP = {
    "type": "function",
    "name": "lookup",
    "description": "Look a value up.",
    "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
}


def test_a_waiting_turn_survives_a_daemon_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serve_core_only(data_dir) as base_url:
        device = new_device(base_url, data_dir, "elsewhere")
        daemon = start_daemon(base_url, device["file"])
        try:
            with sdk(base_url) as client:
                agent = client.beta.agents.create(model="scripted", tools=[LOOKUP])  # type: ignore[list-item]
                stream = client.beta.agents.sessions.create(
                    agent_id=agent.id,
                    environment={"type": "none"},
                    input="/say asking\n/call lookup {}\n/say got {result}",
                    stream=True,
                )
                action: Any = None
                session_id = ""
                for event in stream:
                    if event.type == "agent.session.created":
                        session_id = event.session.id
                    if event.type == "agent.session.requires_action":
                        action = event.session.required_actions[0]  # type: ignore[attr-defined]
                        break
                stream.close()
                assert action is not None
                before = client.beta.agents.sessions.turns.list(session_id).data[0]
                daemon.send_signal(signal.SIGKILL)
                daemon.wait(timeout=WAIT)
                if daemon.stderr is not None:
                    daemon.stderr.close()
                daemon = start_daemon(base_url, device["file"])
                with client.beta.agents.sessions.events.stream(session_id) as live:
                    client.beta.agents.sessions.events.create(
                        session_id,
                        events=[
                            {
                                "type": "agent.session.input.tool_result",
                                "turn_id": action.turn_id,
                                "call_id": action.call_id,
                                "success": True,
                                "output": "42",
                            }  # type: ignore[list-item]
                        ],
                    )
                    for event in live:
                        if event.type == "agent.session.idle":
                            break
                turn = client.beta.agents.sessions.turns.list(session_id).data[0]
                assert turn.status == "completed", turn.error
                epoch = turn.x_corebox["worker_epoch"]  # type: ignore[attr-defined]
                assert epoch > before.x_corebox["worker_epoch"]  # type: ignore[attr-defined]
                items = client.beta.agents.sessions.items.list(session_id, order="asc").data
                texts = [i.content[0].text for i in items if i.type == "message"]  # type: ignore[union-attr]
                assert texts == [
                    "/say asking\n/call lookup {}\n/say got {result}",
                    "asking",
                    "got 42",
                ]
                assert [i.type for i in items].count("function_call") == 1
        finally:
            if daemon.poll() is None:
                daemon.terminate()
                daemon.wait(timeout=WAIT)
            if daemon.stderr is not None:
                daemon.stderr.close()

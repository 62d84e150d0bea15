"""A crash never loses what was acknowledged, and uncertain work is never replayed."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

from openai import OpenAI

from tests.conftest import API_KEY, Server, start_server
from tests.support.sdk import sdk_client


def _client(server: Server) -> OpenAI:
    return sdk_client(
        base_url=f"{server.base_url}/v1",
        api_key=API_KEY,
        max_retries=0,
        _strict_response_validation=True,
    )


def test_a_crash_continues_a_turn_at_its_checkpoint_and_keeps_everything_acknowledged(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    server = start_server(data)
    try:
        with _client(server) as client:
            done = list(
                client.beta.agents.sessions.create(
                    agent={"model": "scripted"},
                    environment={"type": "none"},
                    input="kept",
                    stream=True,
                )
            )
            kept_id = done[0].session.id  # type: ignore[attr-defined]
            stream = client.beta.agents.sessions.create(
                agent={"model": "scripted"},
                environment={"type": "none"},
                input="/say partial\n/hang",
                stream=True,
            )
            hanging_id = None
            seen = 0  # the journal position of the event last read
            for event in stream:
                seen += 1
                if event.type == "agent.session.created":
                    hanging_id = event.session.id
                if event.type == "agent.session.turn.item.done":
                    break  # the first reply is durable; the turn now hangs
            stream.close()
            assert hanging_id is not None
            # The checkpoint before /hang is committed after the reply's events.
            while True:
                before = client.beta.agents.sessions.turns.list(hanging_id).data[0]
                checkpoint = before.x_corebox["checkpoint"]  # type: ignore[attr-defined]
                if checkpoint and checkpoint["journal_seq"] >= seen:
                    break
    finally:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)

    restarted = start_server(data, port=server.port)
    try:
        with _client(restarted) as client:
            kept = client.beta.agents.sessions.items.list(kept_id, order="asc").data
            assert [i.content[0].text for i in kept] == ["kept", "kept"]
            # Nothing was in flight at the checkpoint before /hang: the turn is re-claimed
            # by a new worker and continues there; nothing before it is replayed.
            while True:
                turn = client.beta.agents.sessions.turns.list(hanging_id).data[0]
                if turn.x_corebox["phase"] == "running":  # type: ignore[attr-defined]
                    break
            assert turn.status == "in_progress"
            epoch = turn.x_corebox["worker_epoch"]  # type: ignore[attr-defined]
            assert epoch > before.x_corebox["worker_epoch"]  # type: ignore[attr-defined]
            assert len(client.beta.agents.sessions.turns.list(hanging_id).data) == 1
            with client.beta.agents.sessions.events.stream(hanging_id) as live:
                client.beta.agents.sessions.events.create(
                    hanging_id,
                    events=[{"type": "agent.session.input.cancel"}],  # type: ignore[list-item]
                )
                for event in live:
                    if event.type == "agent.session.idle":
                        break
            assert client.beta.agents.sessions.turns.list(hanging_id).data[0].status == "cancelled"
            items = client.beta.agents.sessions.items.list(hanging_id, order="asc").data
            assert [i.content[0].text for i in items if i.role == "assistant"] == ["partial"]
            with client.beta.agents.sessions.stream(hanging_id, input="fresh") as stream:
                result = stream.get_final_result()
            assert result.turn.status == "completed"
    finally:
        restarted.stop()


def test_a_crash_with_an_operation_in_flight_fails_the_turn_naming_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_server(data)
    try:
        with _client(server) as client:
            stream = client.beta.agents.sessions.create(
                agent={"model": "scripted"},
                environment={"type": "none"},
                input="/say partial\n/stream 100000",
                stream=True,
            )
            session_id = None
            done = 0
            for event in stream:
                if event.type == "agent.session.created":
                    session_id = event.session.id
                if event.type == "agent.session.turn.item.done":
                    done += 1
                added = event.type == "agent.session.turn.item.added"
                if done and added and getattr(event, "output_index", None) == 1:
                    break  # the second reply is streaming: model output in flight
            stream.close()
    finally:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)

    restarted = start_server(data, port=server.port)
    try:
        with _client(restarted) as client:
            assert session_id is not None
            turn = client.beta.agents.sessions.turns.list(session_id).data[0]
            assert turn.status == "failed"
            assert turn.x_corebox["error_code"] == "execution_interrupted"  # type: ignore[attr-defined]
            assert turn.error is not None
            assert "the outcome of model output" in turn.error.message
            items = client.beta.agents.sessions.items.list(session_id, order="asc").data
            assistant = [i for i in items if i.role == "assistant"]
            assert assistant[0].content[0].text == "partial"
            assert assistant[1].status == "incomplete"
            assert client.beta.agents.sessions.retrieve(session_id).status == "idle"
            assert len(client.beta.agents.sessions.turns.list(session_id).data) == 1
    finally:
        restarted.stop()


def _wait_for_caller(listener: socket.socket) -> socket.socket:
    """Block until the set-up command connected to `listener` (it is running then). The
    command runs confined to its workspace, so it signals over loopback, not a file."""
    listener.settimeout(30)
    try:
        caller, _ = listener.accept()
    except TimeoutError:
        raise AssertionError("the set-up command never started") from None
    return caller


def test_a_crash_during_set_up_fails_the_environment_and_its_queued_session(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    started = (
        "python3 -c 'import socket, time; "
        f'socket.create_connection(("127.0.0.1", {port})); time.sleep(15)\''
    )
    server = start_server(data)
    try:
        with OpenAI(
            base_url=f"{server.base_url}/v1",
            api_key=API_KEY,
            max_retries=0,
            _strict_response_validation=True,
        ) as client:
            environment = client.beta.agents.environments.create(
                environment={
                    "type": "openai_hosted",
                    "setup_commands": [{"command": started}],
                }
            )
            _wait_for_caller(listener).close()
            queued = client.beta.agents.sessions.create(
                agent={"model": "scripted"},
                environment={"type": "openai_hosted", "environment_id": environment.id},  # type: ignore[typeddict-unknown-key]
                input="behind the set-up",
            )
    finally:
        listener.close()
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)

    restarted = start_server(data, port=server.port)
    try:
        with OpenAI(
            base_url=f"{restarted.base_url}/v1",
            api_key=API_KEY,
            max_retries=0,
            _strict_response_validation=True,
        ) as client:
            recovered = client.beta.agents.environments.retrieve(environment.id)
            assert recovered.status == "failed"
            failure = recovered.x_corebox["failure"]  # type: ignore[attr-defined]
            assert "interrupted" in failure
            with client.beta.agents.sessions.events.stream(queued.id) as live:
                session = client.beta.agents.sessions.retrieve(queued.id)
                if session.status != "failed":
                    for event in live:
                        if event.type == "agent.session.failed":
                            break
            session = client.beta.agents.sessions.retrieve(queued.id)
            assert session.status == "failed"
            assert session.error is not None and "interrupted" in session.error
            turn = client.beta.agents.sessions.turns.list(queued.id).data[0]
            assert turn.status == "failed"
            assert turn.x_corebox["error_code"] == "sandbox_error"  # type: ignore[attr-defined]
            assert turn.error is not None and "interrupted" in turn.error.message
    finally:
        restarted.stop()

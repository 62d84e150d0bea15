"""The `codex` harness end to end: the official SDK against a real `corebox serve`
whose Runtime drives the real Codex CLI (`codex app-server`), which calls the project's
own loopback model server over the responses streaming protocol. No outside network:
the CLI's home is inside the server's data directory and its model server is local.

The CLI comes from tests/support/codex_cli.py (installed from npm when missing); where
it cannot be installed these tests are skipped with the reason."""

from __future__ import annotations

import os
import secrets
import select
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from openai import BadRequestError, OpenAI

from tests.api.support import OpenApi, Surface, core_key, http
from tests.api.test_builtin import latest_turn, message, send, until_settled
from tests.conftest import API_KEY, Server, start_server
from tests.support.codex_cli import codex_bin
from tests.support.model_server import MODEL, ModelServer, Reply
from tests.support.process_tree import below, hold, survivors

KEY = "sk-codex-model-0123456789"
AGENT = {"model": MODEL, "x_corebox": {"harness": "codex"}}


@pytest.fixture(scope="module")
def codex_path() -> Path:
    directory, reason = codex_bin()
    if directory is None:
        pytest.skip(f"the Codex CLI is unavailable here: {reason}")
    return directory


def with_codex(codex_path: Path) -> dict[str, str]:
    return {"PATH": f"{codex_path}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.fixture(scope="module")
def codex_server(tmp_path_factory: pytest.TempPathFactory, codex_path: Path) -> Iterator[Server]:
    running = start_server(
        tmp_path_factory.mktemp("codex") / "data", extra_env=with_codex(codex_path)
    )
    yield running
    running.stop()


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


@contextmanager
def surface_for(server: Server) -> Iterator[Surface]:
    """The server's surface; every JSON response a client saw is checked at the end."""
    status, spec, _ = http(server.base_url, "GET", "/openapi.json")
    assert status == 200
    checked = Surface(server, OpenApi(spec), core_key(server.data_dir))
    yield checked
    for sdk in checked.clients:
        sdk.close()
    checked.verify()


@pytest.fixture
def codex_client(codex_server: Server) -> Iterator[OpenAI]:
    with surface_for(codex_server) as surface:
        yield surface.client(API_KEY)


def codex_body(model: ModelServer) -> dict[str, Any]:
    return {
        "x_corebox": {
            "model_provider": {"protocol": "responses", "base_url": model.base_url, "api_key": KEY}
        }
    }


def start(
    client: OpenAI,
    model: ModelServer,
    text: str,
    environment: dict[str, Any] | None = None,
) -> tuple[str, list[Any]]:
    """A codex session and the events of its first turn."""
    events = list(
        client.beta.agents.sessions.create(
            agent=AGENT,  # type: ignore[arg-type]
            environment=environment or {"type": "none"},  # type: ignore[arg-type]
            input=text,
            stream=True,
            extra_body=codex_body(model),
        )
    )
    return str(events[0].session.id), events


def deltas(events: list[Any]) -> str:
    return "".join(e.delta for e in events if e.type == "agent.session.turn.output_text.delta")


def user_texts(body: dict[str, Any]) -> list[str]:
    """The user texts a responses request carried, in order, without the context the CLI
    adds itself (`<environment_context>` and the like)."""
    return [
        part.get("text", "")
        for item in body.get("input", [])
        if item.get("type") == "message" and item.get("role") == "user"
        for part in item.get("content", [])
        if not part.get("text", "").startswith("<")
    ]


def test_the_harness_is_listed_with_the_cli_version(codex_server: Server) -> None:
    with surface_for(codex_server) as surface:
        status, body = surface.core("GET", "/core/v1/harnesses")
    assert status == 200
    codex = next(h for h in body["data"] if h["kind"] == "codex")
    assert codex["available"] is True
    assert [d["version"] for d in codex["devices"]] == ["0.171.0"]
    assert set(codex["protocols"]) == {"responses"}


def test_a_turn_streams_text_with_usage(codex_client: OpenAI, model: ModelServer) -> None:
    model.queue(Reply.say("Hello from codex.", usage=(21, 4)))
    session_id, events = start(codex_client, model, "say hello")
    assert deltas(events) == "Hello from codex."
    turn = latest_turn(codex_client, session_id)
    assert turn.status == "completed"
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (21, 4)
    assert model.requests[0].authorization == f"Bearer {KEY}"
    assert model.requests[0].body["model"] == MODEL
    assert user_texts(model.requests[0].body)[-1] == "say hello"


def test_a_command_runs_after_an_approval_given_through_the_sdk(
    codex_client: OpenAI, model: ModelServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model.queue(Reply.call("exec_command", {"cmd": "touch made.txt"}), Reply.say("Made it."))
    # As a user would: a saved agent choosing the harness and its model provider.
    agent = codex_client.beta.agents.create(
        model=MODEL,
        extra_body={"x_corebox": {"harness": "codex", **codex_body(model)["x_corebox"]}},
    )
    created = codex_client.beta.agents.sessions.create(
        agent_id=agent.id,
        environment={"type": "self_hosted", "workspace_directory": str(workspace)},  # type: ignore[typeddict-item]
    )
    with codex_client.beta.agents.sessions.events.stream(created.id) as live:
        send(codex_client, created.id, message("create made.txt"))
        seen = []
        for event in live:
            seen.append(event)
            if event.type == "agent.session.requires_action":
                action = event.session.required_actions[0]
                break
        assert action.type == "mcp_approval_request"
        assert "touch made.txt" in action.request.message
        assert not (workspace / "made.txt").exists()
        send(
            codex_client,
            created.id,
            {
                "type": "agent.session.input.mcp_approval_request_result",
                "request_id": action.request_id,
                "response": {"type": "mcp_tool_call", "decision": "approve"},
            },
        )
        seen += until_settled(live)
    assert (workspace / "made.txt").exists()
    assert deltas(seen) == "Made it."
    assert latest_turn(codex_client, created.id).status == "completed"
    commands = [
        i
        for i in codex_client.beta.agents.sessions.items.list(created.id).data
        if i.type == "command_execution"
    ]
    assert len(commands) == 1 and commands[0].exit_code == 0
    outputs = [i for i in model.requests[1].body["input"] if i["type"] == "function_call_output"]
    assert len(outputs) == 1


def test_a_steered_message_reaches_the_running_turn(
    codex_client: OpenAI, model: ModelServer
) -> None:
    model.queue(Reply.say("Ready."))
    session_id, _ = start(codex_client, model, "hello")
    model.queue(Reply.say("a long answer that is still being written", hang=True))
    model.queue(Reply.say("Steered."))
    with codex_client.beta.agents.sessions.events.stream(session_id) as live:
        send(codex_client, session_id, message("write a long answer"))
        for event in live:
            if event.type == "agent.session.turn.output_text.delta":
                break
        send(codex_client, session_id, message("keep it short"))
        rest = until_settled(live)
    turns = codex_client.beta.agents.sessions.turns.list(session_id).data
    assert [t.status for t in turns] == ["completed", "completed"]  # the steer joined the turn
    steered = [e.item for e in rest if e.type == "agent.session.turn.item.added"]
    assert next((i.role, i.content[0].text) for i in steered if i.type == "message") == (
        "user",
        "keep it short",
    )
    assert deltas(rest).endswith("Steered.")
    assert user_texts(model.requests[-1].body)[-2:] == ["write a long answer", "keep it short"]


def test_a_turn_is_cancelled_mid_stream(codex_client: OpenAI, model: ModelServer) -> None:
    model.queue(Reply.say("Ready."))
    session_id, _ = start(codex_client, model, "hello")
    model.queue(Reply.say("a very long story about nothing", hang=True))
    with codex_client.beta.agents.sessions.events.stream(session_id) as live:
        send(codex_client, session_id, message("tell me a story"))
        for event in live:
            if event.type == "agent.session.turn.output_text.delta":
                break
        send(codex_client, session_id, {"type": "agent.session.input.cancel"})
        rest = until_settled(live)
    assert "agent.session.turn.cancelled" in [e.type for e in rest]
    assert latest_turn(codex_client, session_id).status == "cancelled"
    items = codex_client.beta.agents.sessions.items.list(session_id, order="desc", limit=1).data
    assert (items[0].type, items[0].status) == ("message", "incomplete")
    model.release.set()
    assert model.client_left.wait(10)  # the CLI closed the model stream


def test_a_failed_model_call_is_classified_by_status(
    codex_client: OpenAI, model: ModelServer
) -> None:
    # Enough failures for every try the CLI may make (it retries some failures twice).
    model.queue(*[Reply.fail(429, "rate_limit_exceeded")] * 3)
    session_id, _ = start(codex_client, model, "hi")
    turn = latest_turn(codex_client, session_id)
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "rate_limit_exceeded"
    assert "scripted failure" not in turn.error.message


def test_the_native_thread_resumes_after_a_restart(
    tmp_path: Path, codex_path: Path, model: ModelServer
) -> None:
    data = tmp_path / "data"
    first = start_server(data, extra_env=with_codex(codex_path))
    try:
        with surface_for(first) as surface:
            client = surface.client(API_KEY)
            model.queue(Reply.say("Noted: the word is heron."))
            session_id, _ = start(client, model, "remember the word heron")
            assert latest_turn(client, session_id).status == "completed"
    finally:
        first.stop()
    second = start_server(data, extra_env=with_codex(codex_path))
    try:
        with surface_for(second) as surface:
            client = surface.client(API_KEY)
            model.queue(Reply.say("The word was heron."))
            with client.beta.agents.sessions.events.stream(session_id) as live:
                send(client, session_id, message("what was the word?"))
                until_settled(live)
            assert latest_turn(client, session_id).status == "completed"
    finally:
        second.stop()
    resumed = model.requests[-1].body
    assert user_texts(resumed)[-2:] == ["remember the word heron", "what was the word?"]
    said = [
        part.get("text")
        for item in resumed["input"]
        if item.get("role") == "assistant"
        for part in item.get("content", [])
    ]
    assert "Noted: the word is heron." in said


def test_a_missing_cli_is_refused_at_session_creation(
    tmp_path: Path, model: ModelServer, codex_path: Path
) -> None:
    without = os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep) if not (Path(d) / "codex").exists()
    )
    running = start_server(tmp_path / "data", extra_env={"PATH": without})
    try:
        with surface_for(running) as surface:
            client = surface.client(API_KEY)
            _, listed = surface.core("GET", "/core/v1/harnesses")
            assert "codex" not in [h["kind"] for h in listed["data"]]
            with pytest.raises(BadRequestError) as refused:
                client.beta.agents.sessions.create(
                    agent=AGENT,  # type: ignore[arg-type]
                    environment={"type": "none"},
                    input="hi",
                    extra_body=codex_body(model),
                )
    finally:
        running.stop()
    assert "npm install -g @openai/codex" in refused.value.message
    assert model.requests == []


def test_only_a_project_the_owner_trusts_runs_the_harness(
    codex_server: Server, model: ModelServer
) -> None:
    """The CLI runs its tools outside corebox's command sandbox (they could read the
    data directory's keys) and the approval comes from the project's own key, so the
    owner's trust decides: refused at creation without it, and a turn after trust is
    withdrawn fails before anything runs."""
    with surface_for(codex_server) as surface:
        project_id, key = surface.project("cli-untrusted")
        client = surface.client(key)
        with pytest.raises(BadRequestError) as refused:
            start(client, model, "hello")
        assert refused.value.code == "unsupported_or_invalid_configuration"
        assert refused.value.body["param"] == "agent.x_corebox.harness"  # type: ignore[index]
        assert "corebox projects trust" in refused.value.message
        assert client.beta.agents.sessions.list().data == []

        trust = f"/core/v1/projects/{project_id}/host_grants/trust"
        assert surface.core("POST", trust, {"trusted": True})[0] == 200
        model.queue(Reply.say("Hello."))
        session_id, events = start(client, model, "hello")
        assert events[-2].type == "agent.session.turn.completed"

        assert surface.core("POST", trust, {"trusted": False})[0] == 200
        asked = len(model.requests)
        model.queue(Reply.say("Again."))
        with client.beta.agents.sessions.events.stream(session_id) as live:
            send(client, session_id, message("again"))
            until_settled(live)
        turn = latest_turn(client, session_id)
        assert turn.status == "failed"
        assert turn.x_corebox["error_code"] == "sandbox_error"
        assert len(model.requests) == asked  # nothing reached the model


def processes_with(marker: str) -> list[int]:
    """Live processes (zombies excluded) whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_for_fifo(path: Path) -> str:
    """What a command writes into the FIFO at `path` (the hang guard fails the test)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        ready, _, _ = select.select([descriptor], [], [], 60)
        assert ready, "the command never started"
        return os.read(descriptor, 4096).decode()
    finally:
        os.close(descriptor)


def test_a_cancel_ends_every_process_the_turn_started(
    codex_client: OpenAI, model: ModelServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.mkfifo(workspace / "ready")
    marker = f"sleep {secrets.randbelow(10**6) + 10**6}"
    # The command outlives the CLI's wait for it (a second), so the CLI keeps it running
    # in the background and asks the model again; the turn is cancelled then.
    model.queue(
        Reply.call(
            "exec_command",
            {"cmd": f"echo started > ready; {marker}; touch slept.txt", "yield_time_ms": 1000},
        ),
        Reply.say("Waiting for the command to finish.", hang=True),
        Reply.say("Still here."),
    )
    body = codex_body(model)
    body["x_corebox"]["tool_policy"] = {"run_command": "allow"}
    session = codex_client.beta.agents.sessions.create(
        agent=AGENT,  # type: ignore[arg-type]
        environment={"type": "self_hosted", "workspace_directory": str(workspace)},  # type: ignore[typeddict-item]
        extra_body=body,
    )
    with codex_client.beta.agents.sessions.events.stream(session.id) as live:
        send(codex_client, session.id, message("sleep, then touch slept.txt"))
        assert wait_for_fifo(workspace / "ready").strip() == "started"
        assert model.hanging.wait(60)
        assert processes_with(marker)
        send(codex_client, session.id, {"type": "agent.session.input.cancel"})
        until_settled(live)
    model.release.set()
    assert latest_turn(codex_client, session.id).status == "cancelled"
    # The cancel was confirmed only once the command and its shell were gone.
    assert processes_with(marker) == []
    # The next turn resumes the same native thread.
    with codex_client.beta.agents.sessions.events.stream(session.id) as live:
        send(codex_client, session.id, message("are you there?"))
        rest = until_settled(live)
    assert latest_turn(codex_client, session.id).status == "completed"
    assert deltas(rest) == "Still here."
    assert user_texts(model.requests[-1].body)[-2:] == [
        "sleep, then touch slept.txt",
        "are you there?",
    ]
    assert not (workspace / "slept.txt").exists()


def test_a_call_id_the_model_repeats_in_a_later_turn_is_asked_about_again(
    codex_client: OpenAI, model: ModelServer, tmp_path: Path
) -> None:
    """Model servers do not all keep call ids unique across a conversation (these carry
    the same second): each turn's approval still has an id of its own."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = codex_client.beta.agents.sessions.create(
        agent=AGENT,  # type: ignore[arg-type]
        environment={"type": "self_hosted", "workspace_directory": str(workspace)},  # type: ignore[typeddict-item]
        extra_body=codex_body(model),
    )
    asked = []
    for name in ("one.txt", "two.txt"):
        model.queue(
            Reply.call("exec_command", {"cmd": f"touch {name}"}, call_time=1_700_000_000),
            Reply.say("Done."),
        )
        with codex_client.beta.agents.sessions.events.stream(session.id) as live:
            send(codex_client, session.id, message(f"create {name}"))
            for event in live:
                assert event.type not in ("agent.session.turn.failed", "agent.session.idle")
                if event.type == "agent.session.requires_action":
                    action = event.session.required_actions[0]
                    break
            asked.append(action.request_id)
            send(
                codex_client,
                session.id,
                {
                    "type": "agent.session.input.mcp_approval_request_result",
                    "request_id": action.request_id,
                    "response": {"type": "mcp_tool_call", "decision": "approve"},
                },
            )
            until_settled(live)
        assert latest_turn(codex_client, session.id).status == "completed"
        assert (workspace / name).exists()
    assert asked[0] != asked[1]


def test_no_cli_process_outlives_a_killed_server(
    tmp_path: Path, codex_path: Path, model: ModelServer
) -> None:
    """A kill -9 of the server leaves no CLI behind holding the model credential."""
    model.queue(Reply.say("a very long story about nothing", hang=True))
    server = start_server(tmp_path / "data", extra_env=with_codex(codex_path))
    try:
        with surface_for(server) as surface:
            client = surface.client(API_KEY)
            client.beta.agents.sessions.create(
                agent=AGENT,  # type: ignore[arg-type]
                environment={"type": "none"},
                input="tell me a story",
                extra_body=codex_body(model),
            )
            assert model.hanging.wait(60)
            assert below(server.process.pid)
            held = hold(below(server.process.pid))
            server.process.kill()
            server.process.wait(15)
    finally:
        server.stop()
    assert survivors(held) == []
    model.release.set()

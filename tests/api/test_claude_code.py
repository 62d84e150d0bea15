"""The `claude_code` harness end to end: the official SDK against a real `corebox serve`
whose Runtime drives the real Claude Code CLI (installed by the test set-up) against a
loopback Anthropic Messages server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.api.test_builtin import latest_turn, message, send, until_settled
from tests.conftest import Server, start_server
from tests.runtime.harness.claude_code_support import claude_command
from tests.support.anthropic_server import AnthropicServer, Turn
from tests.support.process_tree import below, hold, survivors
from tests.support.sdk import sdk_client

KEY = "sk-ant-test-0123456789"


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """`claude` on PATH, and a HOME of the test's own for the CLI's configuration."""
    command = Path(claude_command())
    bin_dir = tmp_path_factory.mktemp("bin")
    (bin_dir / "claude").symlink_to(command)
    home = tmp_path_factory.mktemp("home")
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(home)}


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory, cli_env: dict[str, str]) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("corebox")
    server = start_server(base / "data", extra_env=cli_env)
    yield server
    server.stop()


def connect(server: Server) -> OpenAI:
    return sdk_client(
        base_url=f"{server.base_url}/v1",
        api_key="test-key",
        max_retries=0,
        _strict_response_validation=True,
    )


@pytest.fixture
def sdk(running: Server) -> Iterator[OpenAI]:
    with connect(running) as client:
        yield client


@pytest.fixture
def model() -> Iterator[AnthropicServer]:
    with AnthropicServer().running() as server:
        yield server


def agent(client: OpenAI, model: AnthropicServer) -> str:
    created = client.beta.agents.create(
        model="test-model",
        extra_body={
            "x_corebox": {
                "harness": "claude_code",
                "model_provider": {
                    "protocol": "anthropic_messages",
                    "base_url": model.base_url,
                    "api_key": KEY,
                },
            }
        },
    )
    return str(created.id)


def test_the_harness_is_listed_with_its_version(sdk: OpenAI, running: Server) -> None:
    listed: Any = sdk.get(f"{running.base_url}/core/v1/harnesses", cast_to=object)
    [entry] = [h for h in listed["data"] if h["kind"] == "claude_code"]
    assert entry["available"]
    assert entry["devices"][0]["version"].startswith("2.1.")


def test_a_file_is_created_after_an_approval_given_through_the_sdk(
    sdk: OpenAI, model: AnthropicServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    target = workspace / "hello.txt"
    model.queue(
        Turn.use("Write", {"file_path": str(target), "content": "made by claude"}, "Creating."),
        Turn.say("The file is ready."),
    )
    agent_id = agent(sdk, model)
    session = sdk.beta.agents.sessions.create(
        agent_id=agent_id,
        environment={"type": "self_hosted", "workspace_directory": str(workspace)},  # type: ignore[arg-type]
    )
    session_id = str(session.id)
    with sdk.beta.agents.sessions.events.stream(session_id) as live:
        send(sdk, session_id, message("create hello.txt"))
        seen = []
        for event in live:
            seen.append(event)
            if event.type == "agent.session.requires_action":
                action = event.session.required_actions[0]
                break
        assert action.type == "mcp_approval_request"
        assert not target.exists()
        send(
            sdk,
            session_id,
            {
                "type": "agent.session.input.mcp_approval_request_result",
                "request_id": action.request_id,
                "response": {"type": "mcp_tool_call", "decision": "approve"},
            },
        )
        seen += until_settled(live)
    assert latest_turn(sdk, session_id).status == "completed"
    assert target.read_text() == "made by claude"
    deltas = "".join(e.delta for e in seen if e.type == "agent.session.turn.output_text.delta")
    assert deltas == "Creating.The file is ready."


def turn(client: OpenAI, session_id: str, text: str) -> list[Any]:
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message(text))
        return until_settled(live)


def test_the_native_session_is_resumed_after_a_restart(
    tmp_path: Path, cli_env: dict[str, str], model: AnthropicServer
) -> None:
    data = tmp_path / "data"
    model.queue(Turn.say("I will remember apricot."), Turn.say("It was apricot."))
    server = start_server(data, extra_env=cli_env)
    try:
        with connect(server) as client:
            agent_id = agent(client, model)
            events = list(
                client.beta.agents.sessions.create(
                    agent_id=agent_id,
                    environment={"type": "none"},
                    input="remember apricot",
                    stream=True,
                )
            )
            session_id = str(events[0].session.id)
            assert latest_turn(client, session_id).status == "completed"
    finally:
        server.stop()
    server = start_server(data, extra_env=cli_env)
    try:
        with connect(server) as client:
            seen = turn(client, session_id, "which word?")
            assert latest_turn(client, session_id).status == "completed"
    finally:
        server.stop()
    deltas = "".join(e.delta for e in seen if e.type == "agent.session.turn.output_text.delta")
    assert deltas == "It was apricot."
    history = str(model.requests[-1]["messages"])
    assert "remember apricot" in history and "I will remember apricot." in history


def test_a_cancel_through_the_sdk_stops_the_cli(sdk: OpenAI, model: AnthropicServer) -> None:
    model.queue(Turn.say("A story that never ends.", hang=True), Turn.say("Next."))
    agent_id = agent(sdk, model)
    events = sdk.beta.agents.sessions.create(
        agent_id=agent_id, environment={"type": "none"}, input="tell a story", stream=True
    )
    session_id = ""
    for event in events:
        session_id = session_id or str(event.session.id)  # type: ignore[union-attr]
        if event.type == "agent.session.turn.output_text.delta":
            break
    events.close()
    with sdk.beta.agents.sessions.events.stream(session_id) as live:
        send(sdk, session_id, {"type": "agent.session.input.cancel"})
        rest = until_settled(live)
    assert "agent.session.turn.cancelled" in [e.type for e in rest]
    assert latest_turn(sdk, session_id).status == "cancelled"
    model.release.set()
    assert model.left.wait(30)  # the CLI was stopped and its model stream closed
    # The next turn resumes the native session in a new CLI process.
    turn(sdk, session_id, "and now?")
    assert latest_turn(sdk, session_id).status == "completed"
    assert "tell a story" in str(model.requests[-1]["messages"])


def test_no_cli_process_outlives_a_killed_server(
    tmp_path: Path, cli_env: dict[str, str], model: AnthropicServer
) -> None:
    """A kill -9 of the server leaves no CLI behind holding the model credential."""
    model.queue(Turn.say("A story that never ends.", hang=True))
    server = start_server(tmp_path / "data", extra_env=cli_env)
    try:
        with connect(server) as client:
            agent_id = agent(client, model)
            client.beta.agents.sessions.create(
                agent_id=agent_id, environment={"type": "none"}, input="tell a story"
            )
            assert model.hanging.wait(60)
            cli = [pid for pid in below(server.process.pid) if "claude" in _cmdline(pid)]
            assert cli
            held = hold(below(server.process.pid))
            server.process.kill()
            server.process.wait(15)
    finally:
        server.stop()
    assert survivors(held) == []
    model.release.set()


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.parametrize(
    ("harness", "protocol"),
    [
        ("claude_code", "chat_completions"),
        ("claude_code", "responses"),
        ("builtin", "anthropic_messages"),
    ],
)
def test_a_harness_is_refused_a_protocol_it_does_not_speak(
    client: OpenAI, harness: str, protocol: str
) -> None:
    provider = {"protocol": protocol, "base_url": "http://127.0.0.1:9/v1", "api_key": KEY}
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.create(
            agent={"model": "test-model", "x_corebox": {"harness": harness}},  # type: ignore[typeddict-unknown-key]
            environment={"type": "none"},
            input="hi",
            extra_body={"x_corebox": {"model_provider": provider}},
        )
    error: Any = caught.value.body
    assert error["code"] == "unsupported_or_invalid_configuration"
    assert error["param"] == "x_corebox.model_provider.protocol"

"""Conversation continuity for `builtin`: a new Executor (here: after kill -9 of the
whole server) rebuilds the session's model context from Core's committed items, and the
turn records the window it started with."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.conftest import API_KEY, Server, start_server
from tests.support.model_server import MODEL, ModelServer, Reply
from tests.support.sdk import sdk_client

KEY = "sk-model-secret-0123456789"


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def client_of(server: Server) -> OpenAI:
    return sdk_client(
        base_url=f"{server.base_url}/v1",
        api_key=API_KEY,
        max_retries=0,
        _strict_response_validation=True,
    )


def first_turn(client: OpenAI, model: ModelServer, text: str) -> str:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": MODEL},
            environment={"type": "none"},
            input=text,
            stream=True,
            extra_body={
                "x_corebox": {
                    "model_provider": {
                        "protocol": "chat_completions",
                        "base_url": model.base_url,
                        "api_key": KEY,
                    }
                }
            },
        )
    )
    return str(events[0].session.id)


def next_turn(client: OpenAI, session_id: str, text: str) -> Any:
    with client.beta.agents.sessions.stream(session_id, input=text) as stream:
        return stream.get_final_result()


def contents(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], str(m.get("content"))) for m in request["messages"]]


def test_a_restart_keeps_the_conversation(tmp_path: Path, model: ModelServer) -> None:
    data = tmp_path / "data"
    model.queue(Reply.say("Hello Ada."), Reply.say("Your name is Ada."))
    server = start_server(data)
    try:
        with client_of(server) as client:
            session_id = first_turn(client, model, "my name is Ada")
            first = client.beta.agents.sessions.turns.list(session_id).data[0]
            assert first.status == "completed"
            assert first.x_corebox["context"]["rebuilt"] is False  # type: ignore[attr-defined]
    finally:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)

    restarted = start_server(data, port=server.port)
    try:
        with client_of(restarted) as client:
            result = next_turn(client, session_id, "what is my name?")
            assert result.turn.status == "completed"
            turn = client.beta.agents.sessions.turns.retrieve(result.turn.id, session_id=session_id)
            context = turn.x_corebox["context"]  # type: ignore[attr-defined]
            assert context == {
                "rebuilt": True,
                "items_included": 2,
                "items_omitted": 0,
                "turns_hidden": 0,
            }
    finally:
        restarted.stop()
    assert len(model.requests) == 2
    second = contents(model.requests[1].body)
    assert [(role, text) for role, text in second if role != "system"] == [
        ("user", "my name is Ada"),
        ("assistant", "Hello Ada."),
        ("user", "what is my name?"),
    ]

"""The `builtin` harness against model servers that misbehave, through the official SDK
and a real `corebox serve`: usage is reported after every model call, so a turn that
fails or is cancelled keeps what it used and a session's budget stops a turn that keeps
calling the model; a stream cut short or an answer that is not an event stream fails the
turn on either protocol; and a server that never answers, stops sending or sends only
comments fails the turn as `request_timeout` once the configured bound passes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.api.test_builtin import KEY, latest_turn, message, send, until_settled
from tests.api.test_run_control import sdk
from tests.conftest import start_server
from tests.support.model_server import MODEL, ModelServer, Reply
from tests.support.sdk import send_and_settle

PROTOCOLS = ["chat_completions", "responses"]
# A hang guard: a turn that should have failed on its own fails here instead of hanging
# (with turn_deadline_exceeded, which no test below expects).
GUARD_SECONDS = 60
CALL = (150, 18)  # the tokens each model call reports: 168 in all


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def start(
    client: OpenAI, model: ModelServer, text: str, protocol: str = "chat_completions", **more: Any
) -> str:
    """A builtin session whose first turn has settled; its id."""
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": MODEL},
            environment={"type": "none"},
            input=text,
            stream=True,
            extra_body={
                "x_corebox": {
                    "model_provider": {
                        "protocol": protocol,
                        "base_url": model.base_url,
                        "api_key": KEY,
                    },
                    "turn_deadline_seconds": GUARD_SECONDS,
                }
            },
            **more,
        )
    )
    return str(events[0].session.id)


def test_a_failed_turn_keeps_the_usage_it_reported(client: OpenAI, model: ModelServer) -> None:
    model.queue(*(Reply.call("lookup", {"n": n}, usage=CALL) for n in range(64)))
    session_id = start(client, model, "look everything up")
    turn = latest_turn(client, session_id)
    assert turn.status == "failed"
    assert turn.error is not None and "64 calls" in turn.error.message
    assert turn.usage is not None
    assert (turn.usage.input_tokens, turn.usage.total_tokens) == (64 * 150, 64 * 168)
    session = client.beta.agents.sessions.retrieve(session_id)
    assert session.usage is not None and session.usage.total_tokens == 64 * 168
    # The next turn adds its own usage to what the failed one used.
    model.queue(Reply.say("Done.", usage=CALL))
    assert send_and_settle(client, session_id, "stop now").status == "completed"
    session = client.beta.agents.sessions.retrieve(session_id)
    assert session.usage is not None and session.usage.total_tokens == 65 * 168


def test_a_budget_stops_a_turn_that_keeps_calling_the_model(
    client: OpenAI, model: ModelServer
) -> None:
    model.queue(*(Reply.call("lookup", {"n": n}, usage=CALL) for n in range(64)))
    session_id = start(client, model, "look everything up", spend_control={"limit": 5000})
    turn = latest_turn(client, session_id)
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "session_budget_exceeded"
    assert turn.usage is not None
    used = turn.usage.total_tokens
    assert used > 5000 and used % 168 == 0  # stopped at a report past the limit ...
    assert len(model.requests) < 64  # ... long before the harness's own bound
    session = client.beta.agents.sessions.retrieve(session_id)
    assert session.spend_control is not None and session.spend_control.consumed == used
    assert session.usage is not None and session.usage.total_tokens == used


def test_a_cancelled_turn_keeps_the_usage_it_reported(client: OpenAI, model: ModelServer) -> None:
    model.queue(Reply.say("Ready.", usage=CALL))
    session_id = start(client, model, "hello")
    model.queue(Reply.call("lookup", {}, usage=CALL), Reply.say("a long answer", hang=True))
    with client.beta.agents.sessions.events.stream(session_id) as live:
        send(client, session_id, message("look it up"))
        for event in live:  # the second model call is writing: the first one reported
            if event.type == "agent.session.turn.output_text.delta":
                break
        send(client, session_id, {"type": "agent.session.input.cancel"})
        until_settled(live)
    turn = latest_turn(client, session_id)
    assert turn.status == "cancelled"
    assert turn.usage is not None and turn.usage.total_tokens == 168
    session = client.beta.agents.sessions.retrieve(session_id)
    assert session.usage is not None and session.usage.total_tokens == 2 * 168


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_stream_cut_short_fails_the_turn(
    client: OpenAI, model: ModelServer, protocol: str
) -> None:
    partial = "The answer begins here and goes on for a while."
    model.queue(Reply.say(partial, cut=True))
    session_id = start(client, model, "answer", protocol)
    turn = latest_turn(client, session_id)
    assert turn.status == "failed"
    assert turn.error is not None and "stream_ended_early" in turn.error.message
    assert turn.x_corebox["error_code"] == "engine_failed"  # type: ignore[attr-defined]
    assert turn.usage is None  # never reported: unknown
    items = client.beta.agents.sessions.items.list(session_id, order="desc", limit=1).data
    assert items[0].type == "message" and items[0].role == "assistant"
    assert items[0].status == "incomplete"
    assert items[0].content[0].text == partial  # type: ignore[union-attr]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "answer",
    [("text/html", b"<html>oops</html>"), ("text/event-stream", b"data: {oops\n\n")],
    ids=["html", "not-json"],
)
def test_an_answer_that_is_not_an_event_stream_fails_the_turn(
    client: OpenAI, model: ModelServer, protocol: str, answer: tuple[str, bytes]
) -> None:
    model.queue(Reply(raw=answer))
    session_id = start(client, model, "answer", protocol)
    turn = latest_turn(client, session_id)
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "server_error"
    assert "oops" not in turn.error.message  # the body is not echoed
    items = client.beta.agents.sessions.items.list(session_id).data
    assert [i.type for i in items] == ["message"]  # the user's, and no reply


IDLE_SECONDS = 1
TOTAL_SECONDS = 3


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenAI]:
    """A server whose model calls wait at most 1 s for the next event and 3 s in all."""
    data = Path(tmp_path_factory.mktemp("bounded")) / "data"
    server = start_server(
        data,
        extra_env={
            "COREBOX_MODEL_IDLE_TIMEOUT_SECONDS": str(IDLE_SECONDS),
            "COREBOX_MODEL_TIMEOUT_SECONDS": str(TOTAL_SECONDS),
        },
    )
    try:
        with sdk(server) as client:
            yield client
    finally:
        server.stop()


STALLS = {
    "never-answers": (Reply.say("hello", silent=True), f"sent nothing for {IDLE_SECONDS} s"),
    "stops-sending": (Reply.say("hello there", hang=True), f"sent nothing for {IDLE_SECONDS} s"),
    "only-comments": (
        Reply.say("hello there", hang=True, hold="keepalive"),
        f"sent nothing for {IDLE_SECONDS} s",
    ),
    "never-ends": (
        Reply.say("hello there", hang=True, hold="drip"),
        f"took longer than {TOTAL_SECONDS} s",
    ),
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("stall", list(STALLS))
def test_a_model_server_that_stalls_fails_the_turn_as_request_timeout(
    bounded: OpenAI, model: ModelServer, protocol: str, stall: str
) -> None:
    reply, reason = STALLS[stall]
    model.queue(reply)
    session_id = start(bounded, model, "hi", protocol)
    turn = latest_turn(bounded, session_id)
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "request_timeout"
    assert reason in turn.error.message
    extension = turn.x_corebox  # type: ignore[attr-defined]
    assert (extension["error_code"], extension["engine_error_code"]) == (
        "engine_failed",
        "request_timeout",
    )
    if stall != "never-answers":  # corebox closed the stream it gave up on
        model.release.set()  # the rest of the reply finds the connection gone
        assert model.client_left.wait(10)

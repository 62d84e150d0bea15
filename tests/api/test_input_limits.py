"""Session input is bounded where it enters, on every route that carries it, so that no
frame to the Runtime can pass the wire's 4 MiB frame limit: an input past 512 KiB (as
the Runtime would receive it) is a 400 `input_too_large` naming the input, and nothing
is stored. One user's input never fails another session's turn: before this bound a
5 MiB input was answered 200 and its start frame closed the Runtime's connection,
failing every turn on it. A frame that still would not fit (an agent's 5 MiB
instructions) fails its own turn alone, never sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from runtime.proto import limits
from tests.api.support import unchanged, until
from tests.api.test_continuity import client_of
from tests.conftest import Server, start_server

WAIT = 30.0
MIB = 1024 * 1024
NONE = {"type": "none"}
SCRIPTED = {"model": "scripted"}
# Past 512 KiB as the Runtime receives it, yet inside a 1 MiB events body.
OVER = "/say ok\n" + "x" * (limits.MAX_INPUT_BYTES + 1)


@pytest.fixture
def own(tmp_path: Path) -> Iterator[Server]:
    """A server of this test's own: its Runtime connection carries only its turns."""
    server = start_server(tmp_path / "data")
    try:
        yield server
    finally:
        server.stop()


def latest_turn(client: OpenAI, session_id: str) -> Any:
    return client.beta.agents.sessions.turns.list(session_id).data[0]


def turn_in(client: OpenAI, session_id: str, *statuses: str) -> Any:
    """The session's latest turn once its status is one of `statuses`."""

    def check() -> Any:
        turn = latest_turn(client, session_id)
        return turn if turn.status in statuses else None

    return until(check, WAIT)


def hanging(client: OpenAI) -> tuple[str, int]:
    """A session whose turn runs until cancelled, and its worker epoch once running."""
    session = client.beta.agents.sessions.create(agent=SCRIPTED, environment=NONE, input="/hang")
    turn = turn_in(client, session.id, "in_progress")
    return session.id, int(turn.x_corebox["worker_epoch"])


def cancelled_untouched(client: OpenAI, session_id: str, epoch: int) -> None:
    """The hanging turn was never disturbed: a cancellation ends it `cancelled` on the
    worker that started it (a lost connection would have failed it, and a reconnection
    would have moved its epoch)."""
    client.beta.agents.sessions.events.create(
        session_id,
        events=[{"type": "agent.session.input.cancel"}],  # type: ignore[list-item]
    )
    turn = turn_in(client, session_id, "cancelled", "failed", "completed")
    assert turn.status == "cancelled", turn.error
    assert turn.x_corebox["worker_epoch"] == epoch


def refused_input(raised: pytest.ExceptionInfo[openai.BadRequestError], param: str) -> None:
    body = raised.value.body
    assert isinstance(body, dict), body
    assert body["code"] == "input_too_large", body
    assert body["param"] == param, body
    assert str(limits.MAX_INPUT_BYTES) in body["message"], body


def test_a_5_mib_input_is_refused_and_the_turn_of_another_session_runs_on(own: Server) -> None:
    client = client_of(own)
    running, epoch = hanging(client)
    before = [s.id for s in client.beta.agents.sessions.list(limit=100)]
    with pytest.raises(openai.BadRequestError) as raised:
        client.beta.agents.sessions.create(
            agent=SCRIPTED, environment=NONE, input="/say ok\n" + "x" * 5 * MIB
        )
    refused_input(raised, "input")
    assert [s.id for s in client.beta.agents.sessions.list(limit=100)] == before
    cancelled_untouched(client, running, epoch)


def test_an_input_just_within_the_limit_runs(client: OpenAI) -> None:
    text = "/say ok\n" + "x" * (limits.MAX_INPUT_BYTES - 200)
    session = client.beta.agents.sessions.create(agent=SCRIPTED, environment=NONE, input=text)
    assert turn_in(client, session.id, "completed", "failed").status == "completed"


def test_follow_up_input_past_the_limit_is_refused_and_changes_nothing(own: Server) -> None:
    client = client_of(own)
    session = client.beta.agents.sessions.create(agent=SCRIPTED, environment=NONE, input="hi")
    turn_in(client, session.id, "completed")
    until(lambda: client.beta.agents.sessions.retrieve(session.id).status == "idle", WAIT)
    with unchanged(own.data_dir), pytest.raises(openai.BadRequestError) as raised:
        client.beta.agents.sessions.events.create(
            session.id,
            events=[
                {"type": "agent.session.input.message", "input": [message(OVER)]}  # type: ignore[list-item]
            ],
        )
    refused_input(raised, "events[0].input")


def message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "input_text", "text": text}]}


def test_input_a_turn_has_not_taken_is_bounded_in_all(own: Server) -> None:
    """Messages waiting to steer a running turn start the next turn if it never takes
    them, so they must fit in one start frame together."""
    client = client_of(own)
    session_id, epoch = hanging(client)
    third = "x" * (limits.MAX_INPUT_BYTES // 3)
    for _ in range(2):
        client.beta.agents.sessions.events.create(
            session_id,
            events=[{"type": "agent.session.input.message", "input": [message(third)]}],  # type: ignore[list-item]
        )
    items = len(client.beta.agents.sessions.items.list(session_id, limit=100).data)
    with pytest.raises(openai.BadRequestError) as raised:
        client.beta.agents.sessions.events.create(
            session_id,
            events=[
                {"type": "agent.session.input.message", "input": [message(third + third)]}  # type: ignore[list-item]
            ],
        )
    refused_input(raised, "events[0].input")
    assert "holds" in str(raised.value.body)
    assert len(client.beta.agents.sessions.items.list(session_id, limit=100).data) == items
    cancelled_untouched(client, session_id, epoch)


def test_an_automation_whose_input_could_never_be_delivered_is_refused(own: Server) -> None:
    client = client_of(own)
    session = client.beta.agents.sessions.create(agent=SCRIPTED, environment=NONE, input="hi")
    turn_in(client, session.id, "completed")
    until(lambda: client.beta.agents.sessions.retrieve(session.id).status == "idle", WAIT)
    targets = {
        "target.input": {
            "type": "new_session",
            "agent": SCRIPTED,
            "environment": NONE,
            "input": [{"type": "message", **message(OVER)}],
        },
        "target.instructions": {
            "type": "existing_session",
            "session_id": session.id,
            "instructions": OVER,
        },
    }
    for param, target in targets.items():
        with unchanged(own.data_dir), pytest.raises(openai.BadRequestError) as raised:
            client.post(
                "/agents/automations",
                body={"type": "once", "name": "big", "run_at": 4102444800, "target": target},
                cast_to=object,
                options={"headers": {"OpenAI-Beta": "agents=v1"}},
            )
        refused_input(raised, param)


def test_a_frame_too_large_to_send_fails_its_own_turn_alone(own: Server) -> None:
    """An agent's instructions are not bounded at admission; a preparation frame past
    the wire's limit is never sent, and only its turn fails, known never delivered."""
    client = client_of(own)
    running, epoch = hanging(client)
    big = client.beta.agents.sessions.create(
        agent={**SCRIPTED, "instructions": "y" * 5 * MIB}, environment=NONE, input="hi"
    )
    turn = turn_in(client, big.id, "failed", "completed")
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "invalid_request"
    assert turn.x_corebox["error_code"] == "configuration_too_large"
    assert "frame limit" in turn.error.message
    cancelled_untouched(client, running, epoch)
    # The connection is the one it was: a new turn runs on it.
    after = client.beta.agents.sessions.create(agent=SCRIPTED, environment=NONE, input="ok")
    assert turn_in(client, after.id, "completed", "failed").status == "completed"


def test_a_runtime_frame_past_the_limit_fails_its_own_turn_alone(own: Server) -> None:
    """The Runtime does not send Core a frame past the wire's limit either (Core would
    close the connection on it): a subagent whose task is 11 copies of a 400 KiB reply
    fails its own turn, naming the frame, and the other session's turn runs on."""
    client = client_of(own)
    running, epoch = hanging(client)
    text = f"/subagent {'s' * 400 * 1024}\n/subagent {'{subagent}' * 11}\n/say never"
    big = client.beta.agents.sessions.create(
        agent={**SCRIPTED, "multi_agent": {"enabled": True}}, environment=NONE, input=text
    )
    turn = turn_in(client, big.id, "failed", "completed")
    assert turn.status == "failed"
    assert turn.error is not None
    assert "output_too_large" in turn.error.message and "frame limit" in turn.error.message
    cancelled_untouched(client, running, epoch)

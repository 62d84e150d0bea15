"""Session budgets and per-turn deadlines through the official SDK: `spend_control` set
at creation is kept, reported with what was consumed (in token units, or exact cents
under a price shown floored), and enforced: once a turn has used the limit up, the next
turn fails with `session_budget_exceeded` before it runs, and a running turn is checked
at each usage it reports against the limit as it stands then. A turn that outlives
`x_corebox.turn_deadline_seconds` is cancelled and fails. A session's usage is the sum
of its turns' usages, a refused turn adding nothing."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

from tests.conftest import API_KEY, Server, start_server
from tests.support.sdk import send_and_settle

# A hang guard: a turn a budget should stop fails with request_timeout instead of hanging.
GUARD = {"x_corebox": {"turn_deadline_seconds": 60}}


def test_spend_control_is_kept_reported_and_enforced(client: OpenAI) -> None:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "none"},
            input="hello\n/usage 40 30",
            spend_control={"limit": 50},
            stream=True,
        )
    )
    session = events[0].session
    assert session.spend_control is not None
    assert (session.spend_control.limit, session.spend_control.consumed) == (50, 0)
    first = client.beta.agents.sessions.turns.list(session.id, limit=1).data[0]
    assert first.status == "completed"
    assert first.usage is not None and first.usage.total_tokens == 70
    retrieved = client.beta.agents.sessions.retrieve(session.id)
    assert retrieved.spend_control is not None
    assert (retrieved.spend_control.limit, retrieved.spend_control.consumed) == (50, 70)

    second = send_and_settle(client, session.id, "again")
    assert second.status == "failed"
    assert second.error is not None and second.error.code == "session_budget_exceeded"
    assert "50" in second.error.message

    # Raising the limit lets the session run again.
    client.beta.agents.sessions.update(session.id, spend_control={"limit": 1000})
    assert send_and_settle(client, session.id, "more").status == "completed"
    # Removing it makes the session unlimited again (the object is omitted).
    cleared = client.beta.agents.sessions.update(session.id, spend_control=None)
    assert cleared.spend_control is None


def test_an_unlimited_session_omits_spend_control(client: OpenAI) -> None:
    session = client.beta.agents.sessions.create(
        agent={"model": "scripted"}, environment={"type": "none"}, input="hi"
    )
    assert session.spend_control is None


def test_a_turn_past_its_deadline_fails(client: OpenAI) -> None:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "none"},
            input="/hang",
            stream=True,
            extra_body={"x_corebox": {"turn_deadline_seconds": 1}},
        )
    )
    assert events[-1].type == "agent.session.idle"
    turn = client.beta.agents.sessions.turns.list(events[0].session.id, limit=1).data[0]
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "request_timeout"
    assert turn.x_corebox["error_code"] == "turn_deadline_exceeded"  # type: ignore[attr-defined]


def test_a_turn_going_past_the_limit_is_stopped_and_fails(client: OpenAI) -> None:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "none"},
            input="/usage 40 30\n/hang",
            spend_control={"limit": 50},
            stream=True,
        )
    )
    assert events[-1].type == "agent.session.idle"
    turn = client.beta.agents.sessions.turns.list(events[0].session.id, limit=1).data[0]
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "session_budget_exceeded"
    assert turn.usage is not None and turn.usage.total_tokens == 70


def test_under_the_owners_price_table_the_budget_is_in_cents(tmp_path: Path) -> None:
    config = tmp_path / "corebox.toml"
    # 0.1 cent per input token, 0.2 cent per output token.
    config.write_text("[prices.scripted]\ninput = 100000\noutput = 200000\n", encoding="utf-8")
    running = start_server(tmp_path / "data", extra_env={"COREBOX_CONFIG": str(config)})
    try:
        with OpenAI(
            base_url=f"{running.base_url}/v1",
            api_key=API_KEY,
            max_retries=0,
            _strict_response_validation=True,
        ) as sdk:
            events = list(
                sdk.beta.agents.sessions.create(
                    agent={"model": "scripted"},
                    environment={"type": "none"},
                    input="/usage 40 30",
                    spend_control={"limit": 10},
                    stream=True,
                )
            )
            session_id = events[0].session.id
            spend = sdk.beta.agents.sessions.retrieve(session_id).spend_control
            assert spend is not None and (spend.limit, spend.consumed) == (10, 10)
            assert send_and_settle(sdk, session_id, "again").error.code == "session_budget_exceeded"
    finally:
        running.stop()


@pytest.mark.parametrize("lowered", [50, 5])
def test_a_limit_lowered_during_a_turn_applies_to_its_next_usage(
    client: OpenAI, lowered: int
) -> None:
    """Lowered to 50 with 20 consumed, or to 5 below it: the turn's next usage report
    (60 in all) is past the new limit, so the turn is stopped and fails."""
    with client.beta.agents.sessions.create(
        agent={"model": "scripted"},
        environment={"type": "none"},
        input="/usage 10 10\n/permission run_command go on\n/usage 30 30\n/hang",
        spend_control={"limit": 1000},
        stream=True,
        extra_body=GUARD,
    ) as live:
        session_id = ""
        for event in live:
            session_id = session_id or event.session.id
            if event.type == "agent.session.requires_action":
                break
        updated = client.beta.agents.sessions.update(session_id, spend_control={"limit": lowered})
        assert updated.spend_control is not None
        assert (updated.spend_control.limit, updated.spend_control.consumed) == (lowered, 20)
        request_id = client.beta.agents.sessions.retrieve(session_id).required_actions[0].request_id
        client.beta.agents.sessions.events.create(
            session_id,
            events=[
                {
                    "type": "agent.session.input.mcp_approval_request_result",
                    "request_id": request_id,
                    "response": {"type": "mcp_tool_call", "decision": "approve"},
                }
            ],
        )
        for event in live:
            if event.type == "agent.session.idle":
                break
    turn = client.beta.agents.sessions.turns.list(session_id, limit=1).data[0]
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "session_budget_exceeded"
    spend = client.beta.agents.sessions.retrieve(session_id).spend_control
    assert spend is not None and (spend.limit, spend.consumed) == (lowered, 60)


def test_a_refused_turn_leaves_the_session_usage_the_sum_of_its_turns(client: OpenAI) -> None:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "none"},
            input="/usage 40 10\n/say a",
            spend_control={"limit": 50},
            stream=True,
        )
    )
    session_id = events[0].session.id
    usage = client.beta.agents.sessions.retrieve(session_id).usage
    assert usage is not None and usage.total_tokens == 50

    refused = send_and_settle(client, session_id, "/say c")
    assert refused.error is not None and refused.error.code == "session_budget_exceeded"
    usage = client.beta.agents.sessions.retrieve(session_id).usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (40, 10)

    client.beta.agents.sessions.update(session_id, spend_control={"limit": 200})
    assert send_and_settle(client, session_id, "/usage 5 5\n/say d").status == "completed"
    session = client.beta.agents.sessions.retrieve(session_id)
    assert session.usage is not None and session.usage.total_tokens == 60
    assert session.spend_control is not None and session.spend_control.consumed == 60


def _priced(tmp_path: Path, data: Path) -> Server:
    """A server whose price table makes the scripted model cost 1 cent per 10,000 input
    tokens and 3 cents per 10,000 output tokens."""
    config = tmp_path / "corebox.toml"
    config.write_text("[prices.scripted]\ninput = 100\noutput = 300\n", encoding="utf-8")
    return start_server(data, extra_env={"COREBOX_CONFIG": str(config)})


def _sdk(running: Server) -> OpenAI:
    return OpenAI(
        base_url=f"{running.base_url}/v1",
        api_key=API_KEY,
        max_retries=0,
        _strict_response_validation=True,
    )


def _priced_session(sdk: OpenAI, text: str) -> str:
    events = list(
        sdk.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "none"},
            input=text,
            spend_control={"limit": 1},
            stream=True,
            extra_body=GUARD,
        )
    )
    return str(events[0].session.id)


def _spend(sdk: OpenAI, session_id: str) -> tuple[int, int | None]:
    spend = sdk.beta.agents.sessions.retrieve(session_id).spend_control
    assert spend is not None
    return spend.limit, spend.consumed


def test_a_priced_budget_is_checked_on_the_exact_spend(tmp_path: Path) -> None:
    """0.4 cent a turn against a limit of 1 cent: two turns run (0.8, shown floored as
    0), the third is stopped at 1.2, and so is a single turn of 1.0001 cents; the exact
    spend is what a kill -9 and a start again find."""
    data = tmp_path / "data"
    running = _priced(tmp_path, data)
    try:
        with _sdk(running) as sdk:
            session_id = _priced_session(sdk, "/usage 1000 1000\n/say a")
            assert send_and_settle(sdk, session_id, "/usage 1000 1000\n/say b").status == (
                "completed"
            )
            assert _spend(sdk, session_id) == (1, 0)
            third = send_and_settle(sdk, session_id, "/usage 1000 1000\n/hang")
            assert third.error is not None and third.error.code == "session_budget_exceeded"
            assert _spend(sdk, session_id) == (1, 1)

            single = _priced_session(sdk, "/usage 10001 0\n/hang")
            turn: Any = sdk.beta.agents.sessions.turns.list(single, limit=1).data[0]
            assert turn.error is not None and turn.error.code == "session_budget_exceeded"
        running.process.send_signal(signal.SIGKILL)
        running.process.wait(30)
        running = _priced(tmp_path, data)
        with _sdk(running) as sdk:
            assert _spend(sdk, session_id) == (1, 1)
            refused = send_and_settle(sdk, session_id, "/say more")
            assert refused.error.code == "session_budget_exceeded"
            assert "(1.2 consumed)" in refused.error.message
    finally:
        running.stop()

"""Session budgets and per-turn deadlines through the official SDK: `spend_control` set
at creation is kept, reported with what was consumed (in token units), and enforced:
once a turn has used the limit up, the next turn fails with `session_budget_exceeded`
before it runs. A turn that outlives `x_corebox.turn_deadline_seconds` is cancelled and
fails. A session's usage is the sum of its turns' usages, a refused turn adding nothing."""

from __future__ import annotations

from pathlib import Path

from openai import OpenAI

from tests.conftest import API_KEY, start_server
from tests.support.sdk import send_and_settle


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

"""Automations through the official SDK: shapes, validation, pause/resume, manual and
scheduled invocations, and schedules that survive a restart."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.api.support import Surface, surface
from tests.conftest import API_KEY, start_server

__all__ = ["surface"]

MESSAGE = [{"role": "user", "content": [{"type": "input_text", "text": "good morning"}]}]
NEW_SESSION: dict[str, Any] = {
    "type": "new_session",
    "agent": {"model": "scripted", "instructions": "be brief"},
    "environment": {"type": "none"},
    "input": MESSAGE,
    "metadata": {"origin": "automation"},
}
POLL_SECONDS = 30.0


def _session(client: OpenAI, text: str = "hello", *, wait: bool = True) -> str:
    stream = client.beta.agents.sessions.create(
        agent={"model": "scripted"}, environment={"type": "none"}, input=text, stream=True
    )
    session_id = None
    for event in stream:
        if event.type == "agent.session.created":
            session_id = event.session.id
            if not wait:
                break
    stream.close()
    assert session_id is not None
    return session_id


def _invocations(client: OpenAI, automation_id: str, count: int = 1) -> list[Any]:
    """Bounded polling: the scheduler fires on its own clock, in another process."""
    deadline = time.monotonic() + POLL_SECONDS
    while time.monotonic() < deadline:
        found = client.beta.agents.automations.invocations.list(automation_id).data
        if len(found) >= count and all(i.status != "queued" for i in found):
            return found
        time.sleep(0.2)
    raise AssertionError(f"automation {automation_id} did not run in time")


def test_periodic_and_once_shapes(surface: Surface) -> None:
    client = surface.new_client()
    periodic = client.beta.agents.automations.with_raw_response.create(
        type="periodic",
        name="daily",
        expression="30 7 * * 1-5",
        timezone="Europe/Paris",
        target=NEW_SESSION,  # type: ignore[arg-type]
        metadata={"team": "a"},
    )
    body = periodic.http_response.json()
    assert body["object"] == "agent.automation" and body["type"] == "periodic"
    assert body["status"] == "active" and body["created_by"] == {"type": "developer"}
    assert (body["expression"], body["timezone"]) == ("30 7 * * 1-5", "Europe/Paris")
    target = body["target"]
    assert target["agent_id"] is None and target["vault_ids"] == []
    assert target["agent"]["instructions"] == "be brief" and "name" not in target["agent"]
    assert target["environment"] == {"type": "none"}
    assert target["input"] == [
        {"type": "message", "role": "user", "content": MESSAGE[0]["content"]}
    ]
    assert target["metadata"] == {"origin": "automation"}

    session_id = _session(client)
    once = client.beta.agents.automations.create(
        type="once",
        name="later",
        run_at=int(time.time()) + 3600,
        target={"type": "existing_session", "session_id": session_id, "instructions": "ping"},
    )
    assert once.type == "once" and once.status == "active"
    assert once.target.type == "existing_session"
    listed = client.beta.agents.automations.list(session_id=session_id)
    assert [a.id for a in listed] == [once.id]
    ids = [periodic.parse().id, once.id]
    for limit in (1, 2):
        assert [a.id for a in client.beta.agents.automations.list(limit=limit, order="asc")] == ids
        assert [a.id for a in client.beta.agents.automations.list(limit=limit)] == ids[::-1]


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"type": "periodic", "expression": "* * *", "timezone": "UTC"}, "expression"),
        ({"type": "periodic", "expression": "61 * * * *", "timezone": "UTC"}, "expression"),
        ({"type": "periodic", "expression": "0 * * * *", "timezone": "Mars/Base"}, "timezone"),
        ({"type": "once", "run_at": 1_000}, "run_at"),
    ],
)
def test_invalid_schedules_are_rejected(
    surface: Surface, fields: dict[str, Any], param: str
) -> None:
    client = surface.new_client()
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.automations.create(name="x", target=NEW_SESSION, **fields)  # type: ignore[arg-type]
    assert caught.value.param == param
    assert client.beta.agents.automations.list().data == []


def test_targets_are_validated(surface: Surface) -> None:
    client = surface.new_client()
    agent = client.beta.agents.create(model="scripted")
    both = {**NEW_SESSION, "agent_id": agent.id}
    neither = {k: v for k, v in NEW_SESSION.items() if k != "agent"}
    cases = [
        (both, openai.BadRequestError),
        (neither, openai.BadRequestError),
        ({**neither, "agent_id": "agent_missing"}, openai.NotFoundError),
        ({**NEW_SESSION, "vault_ids": ["vault_missing"]}, openai.NotFoundError),
        ({**NEW_SESSION, "input": []}, openai.BadRequestError),
        (
            {"type": "existing_session", "session_id": "sess_missing", "instructions": "x"},
            openai.NotFoundError,
        ),
    ]
    for target, error in cases:
        with pytest.raises(error):
            client.beta.agents.automations.create(
                type="once",
                name="x",
                run_at=int(time.time()) + 3600,
                target=target,  # type: ignore[arg-type]
            )
    by_id = client.beta.agents.automations.create(
        type="once",
        name="x",
        run_at=int(time.time()) + 3600,
        target={**neither, "agent_id": agent.id},
    )
    assert by_id.target.agent_id == agent.id and by_id.target.agent is None  # type: ignore[union-attr]


def test_update_pause_resume_and_delete(surface: Surface) -> None:
    client = surface.new_client()
    automation = client.beta.agents.automations.create(
        type="periodic",
        name="p",
        expression="0 9 * * *",
        timezone="UTC",
        target=NEW_SESSION,  # type: ignore[arg-type]
    )
    updated = client.beta.agents.automations.update(
        automation.id, expression="15 9 * * *", timezone="Asia/Tokyo", metadata={"v": "2"}
    )
    assert updated.expression == "15 9 * * *" and updated.timezone == "Asia/Tokyo"  # type: ignore[union-attr]
    assert updated.metadata == {"v": "2"} and updated.name == "p"
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.automations.update(automation.id, run_at=int(time.time()) + 60)
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.automations.update(
            automation.id,
            target={"type": "existing_session", "session_id": "s", "instructions": "x"},
        )
    assert client.beta.agents.automations.pause(automation.id).status == "paused"
    assert client.beta.agents.automations.pause(automation.id).status == "paused"
    assert client.beta.agents.automations.resume(automation.id).status == "active"
    deleted = client.beta.agents.automations.delete(automation.id)
    assert (deleted.object, deleted.deleted) == ("agent.automation.deleted", True)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.automations.retrieve(automation.id)

    once = client.beta.agents.automations.create(
        type="once",
        name="o",
        run_at=int(time.time()) + 3600,
        target=NEW_SESSION,  # type: ignore[arg-type]
    )
    later = int(time.time()) + 7200
    assert client.beta.agents.automations.update(once.id, run_at=later).run_at == later  # type: ignore[union-attr]
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.automations.update(once.id, expression="* * * * *")


def test_manual_invocations_start_sessions_and_skip_busy_ones(surface: Surface) -> None:
    client = surface.new_client()
    starter = client.beta.agents.automations.create(
        type="periodic",
        name="s",
        expression="0 0 1 1 *",
        timezone="UTC",
        target=NEW_SESSION,  # type: ignore[arg-type]
    )
    invocation = client.beta.agents.automations.invocations.create(starter.id)
    assert invocation.status == "completed" and invocation.source.type == "manual"
    assert invocation.scheduled_at is None and invocation.error is None
    assert invocation.session_id is not None
    session = client.beta.agents.sessions.retrieve(invocation.session_id)
    assert session.metadata == {"origin": "automation"}
    assert client.beta.agents.automations.retrieve(starter.id).status == "active"
    fetched = client.beta.agents.automations.invocations.retrieve(
        invocation.id, automation_id=starter.id
    )
    assert fetched == invocation
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.automations.invocations.retrieve("autoinv_x", automation_id=starter.id)

    busy = _session(client, "/hang", wait=False)
    poster = client.beta.agents.automations.create(
        type="periodic",
        name="poke",
        expression="0 0 1 1 *",
        timezone="UTC",
        target={"type": "existing_session", "session_id": busy, "instructions": "status?"},
    )
    skipped = client.beta.agents.automations.invocations.create(poster.id)
    assert skipped.status == "skipped" and skipped.skip_reason == "pending_delivery"
    client.beta.agents.sessions.events.create(busy, events=[{"type": "agent.session.input.cancel"}])
    deadline = time.monotonic() + POLL_SECONDS
    while client.beta.agents.sessions.retrieve(busy).status == "in_progress":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    delivered = client.beta.agents.automations.invocations.create(poster.id)
    assert delivered.status == "completed" and delivered.session_id == busy
    turns = client.beta.agents.sessions.turns.list(busy).data
    assert len(turns) == 2
    made = [skipped.id, delivered.id]
    for limit in (1, 2):
        pages = client.beta.agents.automations.invocations.list(poster.id, limit=limit, order="asc")
        assert [i.id for i in pages] == made


def test_a_once_automation_runs_when_due(surface: Surface) -> None:
    client = surface.new_client()
    automation = client.beta.agents.automations.create(
        type="once",
        name="soon",
        run_at=int(time.time()) + 2,
        target=NEW_SESSION,  # type: ignore[arg-type]
    )
    [invocation] = _invocations(client, automation.id)
    assert invocation.status == "completed" and invocation.source.type == "automation"
    assert invocation.scheduled_at == automation.run_at
    assert invocation.source.automation.id == automation.id  # type: ignore[union-attr]
    assert invocation.session_id is not None
    assert client.beta.agents.automations.retrieve(automation.id).status == "completed"
    with pytest.raises(openai.ConflictError):
        client.beta.agents.automations.resume(automation.id)


def test_a_schedule_made_before_a_restart_runs_after_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = start_server(data)
    try:
        with OpenAI(
            base_url=f"{first.base_url}/v1",
            api_key=API_KEY,
            max_retries=0,
            _strict_response_validation=True,
        ) as client:
            automation = client.beta.agents.automations.create(
                type="once",
                name="after-restart",
                run_at=int(time.time()) + 4,
                target=NEW_SESSION,  # type: ignore[arg-type]
            )
            assert client.beta.agents.automations.invocations.list(automation.id).data == []
    finally:
        first.stop()
    restarted_at = int(time.time())
    second = start_server(data)
    try:
        with OpenAI(
            base_url=f"{second.base_url}/v1",
            api_key=API_KEY,
            max_retries=0,
            _strict_response_validation=True,
        ) as client:
            [invocation] = _invocations(client, automation.id)
            assert invocation.status == "completed"
            assert invocation.created_at >= restarted_at
            assert invocation.scheduled_at == automation.run_at  # type: ignore[union-attr]
            assert client.beta.agents.automations.retrieve(automation.id).status == "completed"
    finally:
        second.stop()

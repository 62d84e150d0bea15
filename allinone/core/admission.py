"""Admission of agents, sessions and session inputs.

Each admission runs in one transaction: the rows it creates and the journal events that
describe them commit together, and the caller is answered only after that commit. A
rejected request writes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UNSET

from allinone.core import agents as agent_config
from allinone.core.api.errors import ApiError, invalid, not_found
from allinone.core.api.models import (
    AgentCreate,
    CancelInputEvent,
    InputEvent,
    InputMessageParam,
    MessageInputEvent,
    SessionCreate,
    ToolResultInputEvent,
)
from allinone.core.ids import Clock, Ids
from allinone.core.recorder import Recorder
from allinone.core.states import TurnStatus, sources_for
from storage import agents as agent_rows
from storage import items as item_rows
from storage import sessions, turns
from storage.database import Database, Tx
from storage.errors import Conflict
from storage.rows import dumps

_encoder = msgspec.json.Encoder(order="sorted")


def digest(value: Any) -> str:
    return hashlib.sha256(_encoder.encode(msgspec.to_builtins(value))).hexdigest()


def _messages(value: str | list[InputMessageParam]) -> list[dict[str, Any]]:
    if isinstance(value, str):
        if not value:
            raise invalid("input must not be empty.", "input")
        return [{"role": "user", "content": [{"type": "input_text", "text": value}]}]
    if not value:
        raise invalid("input must contain at least one message.", "input")
    result = []
    for index, message in enumerate(value):
        content = msgspec.to_builtins(message.content)
        if not content:
            raise invalid("A message needs content.", f"input[{index}].content")
        result.append({"role": "user", "content": content})
    return result


class Admission:
    def __init__(
        self,
        db: Database,
        recorder: Recorder,
        ids: Ids,
        clock: Clock,
        on_work: Callable[[], None],
        on_cancel: Callable[[str], None],
    ) -> None:
        self._db = db
        self._recorder = recorder
        self._ids = ids
        self._clock = clock
        self._on_work = on_work
        self._on_cancel = on_cancel

    async def create_agent(self, project_id: str, body: AgentCreate) -> str:
        config = agent_config.from_create(body)
        agent_config.harness_for(config)
        agent_id = self._ids.new("agent")

        async def job(tx: Tx) -> None:
            await agent_rows.insert(tx, agent_id, project_id, config, self._clock.now())

        await self._db.write(job)
        return agent_id

    async def create_session(
        self, project_id: str, body: SessionCreate, idempotency_key: str | None
    ) -> tuple[str, bool]:
        """Create a session (and its first turn when input is given).

        Return (session_id, created); `created` is False when an earlier request with the
        same idempotency key and body already created it.
        """
        environment = body.environment
        env_type = environment.get("type")
        if env_type != "none":
            if env_type in ("openai_hosted", "self_hosted"):
                raise invalid(
                    f"Environment type {env_type!r} is not available in this build.",
                    "environment.type",
                    code="unsupported_environment",
                )
            raise invalid(
                "environment.type must be one of none, openai_hosted, self_hosted.",
                "environment.type",
            )
        if set(environment) != {"type"}:
            raise invalid("An environment of type none takes no other fields.", "environment")
        if body.input is UNSET or body.input is None:
            raise invalid("Sessions with environment type none require initial input.", "input")
        messages = _messages(body.input)
        metadata = agent_config.check_metadata(None if body.metadata is UNSET else body.metadata)
        request_hash = digest(body)
        now = self._clock.now()

        if body.agent_id is not UNSET:
            wanted: str = body.agent_id
            saved = await self._db.read(lambda r: agent_rows.get(r, project_id, wanted))
            if saved is None:
                raise ApiError(404, "Resource not found.", code="not_found_error", param="agent_id")
            config = dict(saved["config"])
            agent_id = saved["id"]
            if body.agent is not UNSET:
                agent_config.apply_fields(config, body.agent)
        else:
            if body.agent is UNSET or body.agent.model is UNSET:
                raise invalid("agent.model is required without agent_id.", "agent.model")
            config = agent_config.defaults()
            agent_config.apply_fields(config, body.agent)
            agent_id = self._ids.new("agent")
        harness = agent_config.harness_for(config)
        session_id = self._ids.new("sess")

        async def job(tx: Tx) -> tuple[str, bool]:
            if idempotency_key is not None:
                earlier = await sessions.by_idempotency_key(tx, project_id, idempotency_key)
                if earlier is not None:
                    if earlier["request_hash"] != request_hash or earlier["deleted_at"]:
                        raise ApiError(
                            409,
                            "This idempotency key was used with a different request.",
                            code="idempotency_conflict",
                            headers={"x-should-retry": "false"},
                        )
                    return str(earlier["id"]), False
            await sessions.insert(
                tx,
                {
                    "id": session_id,
                    "project_id": project_id,
                    "agent_id": agent_id,
                    "harness": harness,
                    "created_at": now,
                    "agent": agent_config.session_agent(agent_id, config),
                    "environment": {"type": "none"},
                    "metadata": metadata,
                    "vault_ids": [] if body.vault_ids in (UNSET, None) else body.vault_ids,
                    "idempotency_key": idempotency_key,
                    "request_hash": request_hash,
                },
            )
            await self._recorder.emit_session(tx, session_id, "agent.session.created")
            key = idempotency_key or self._ids.new("idem")
            await self._start_turn(tx, session_id, agent_id, messages, key, request_hash, 0)
            return session_id, True

        result = await self._db.write(job)
        self._on_work()
        return result

    async def _start_turn(
        self,
        tx: Tx,
        session_id: str,
        agent_id: str,
        messages: list[dict[str, Any]],
        key: str,
        batch_hash: str,
        position: int,
    ) -> str:
        now = self._clock.now()
        turn_id = self._ids.new("turn")
        try:
            await turns.insert(tx, turn_id, session_id, agent_id, now)
        except Conflict as exc:
            raise ApiError(
                409,
                "The session already has an active turn.",
                code="turn_conflict",
                headers={"x-should-retry": "false"},
            ) from exc
        await self._record_input(
            tx,
            session_id,
            turn_id,
            key,
            position,
            batch_hash,
            "message",
            {"input": messages},
            "admitted",
        )
        await self._recorder.emit_turn(tx, "agent.session.turn.created", turn_id)
        await self._recorder.emit_session(tx, session_id, "agent.session.in_progress")
        for message in messages:
            item = {
                "id": self._ids.new("msg"),
                "session_id": session_id,
                "turn_id": turn_id,
                "created_at": now,
                "type": "message",
                "status": "completed",
                "output_index": None,
                "payload": {"role": "user", "content": message["content"], "phase": None},
            }
            await item_rows.insert(tx, item)
            await self._recorder.emit_item(tx, "agent.session.turn.item.added", item)
        await sessions.touch(tx, session_id, now)
        return turn_id

    async def _record_input(
        self,
        tx: Tx,
        session_id: str,
        turn_id: str | None,
        key: str,
        position: int,
        batch_hash: str,
        kind: str,
        payload: dict[str, Any],
        state: str,
    ) -> None:
        await tx.execute(
            "INSERT INTO turn_inputs (session_id, turn_id, idempotency_key, batch_position,"
            " batch_hash, kind, payload, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                turn_id,
                key,
                position,
                batch_hash,
                kind,
                dumps(payload),
                state,
                self._clock.now(),
            ),
        )

    async def admit_inputs(
        self,
        project_id: str,
        session_id: str,
        events: list[InputEvent],
        idempotency_key: str | None,
    ) -> None:
        """Admit an ordered batch of 0-64 inputs atomically; replay-safe by key."""
        batch_hash = digest(events)
        key = idempotency_key or self._ids.new("idem")
        cancels: list[str] = []

        async def job(tx: Tx) -> bool:
            session = await sessions.get(tx, project_id, session_id)
            if session is None:
                raise not_found()
            earlier = await tx.fetchone(
                "SELECT batch_hash FROM turn_inputs WHERE session_id = ? AND idempotency_key = ?"
                " LIMIT 1",
                (session_id, key),
            )
            if earlier is not None:
                if earlier["batch_hash"] != batch_hash:
                    raise ApiError(
                        409,
                        "This idempotency key was used with different input.",
                        code="idempotency_conflict",
                        headers={"x-should-retry": "false"},
                    )
                return False
            for position, event in enumerate(events):
                await self._admit_one(tx, session, event, key, batch_hash, position, cancels)
            return True

        admitted = await self._db.write(job)
        if admitted:
            self._on_work()
            for turn_id in cancels:
                self._on_cancel(turn_id)

    async def _admit_one(
        self,
        tx: Tx,
        session: dict[str, Any],
        event: InputEvent,
        key: str,
        batch_hash: str,
        position: int,
        cancels: list[str],
    ) -> None:
        session_id = session["id"]
        active = await turns.active(tx, session_id)
        if isinstance(event, MessageInputEvent):
            messages = _messages(event.input)
            if active is not None:
                raise ApiError(
                    409,
                    "The active turn cannot take more input yet.",
                    code="active_turn_not_steerable",
                    headers={"x-should-retry": "false"},
                )
            await self._start_turn(
                tx, session_id, session["agent_id"], messages, key, batch_hash, position
            )
        elif isinstance(event, CancelInputEvent):
            await self._record_input(
                tx,
                session_id,
                active["id"] if active else None,
                key,
                position,
                batch_hash,
                "cancel",
                {},
                "admitted",
            )
            if active is None:
                return
            now = self._clock.now()
            if active["status"] == TurnStatus.QUEUED:
                moved = await turns.transition(
                    tx,
                    active["id"],
                    sources_for(TurnStatus.CANCELLED),
                    TurnStatus.CANCELLED,
                    fields={"cancel_requested_at": now, "completed_at": now},
                )
                if moved:
                    await self._recorder.emit_turn(
                        tx, "agent.session.turn.cancelled", active["id"], terminal=True
                    )
                    await self._recorder.emit_session_activity(tx, session_id)
                return
            await tx.execute(
                "UPDATE turns SET cancel_requested_at = COALESCE(cancel_requested_at, ?)"
                " WHERE id = ?",
                (now, active["id"]),
            )
            cancels.append(active["id"])
        elif isinstance(event, ToolResultInputEvent):
            raise ApiError(
                400,
                f"Unknown pending tool call: {event.call_id}",
                code="invalid_request_error",
                param="events",
            )

"""Admission of agents, sessions and session inputs.

Each admission runs in one transaction: the rows it creates and the journal events that
describe them commit together, and the caller is answered only after that commit. A
rejected request writes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import partial
from typing import Any

import msgspec
from msgspec import UNSET

from allinone.core import agents as agent_config
from allinone.core import features, render
from allinone.core.environments import Environments
from allinone.core.errors import (
    Conflict,
    IdempotencyConflict,
    InvalidRequest,
    NotFound,
    TurnConflict,
)
from allinone.core.ids import Clock, Ids
from allinone.core.model_providers import ModelProviders
from allinone.core.recorder import Recorder
from allinone.core.shapes.models import (
    CancelInputEvent,
    InputEvent,
    InputMessageParam,
    McpApprovalResultInputEvent,
    MessageInputEvent,
    SessionCreate,
    SessionUpdate,
    ToolResultInputEvent,
)
from allinone.core.states import TurnStatus, sources_for
from storage import agents as agent_rows
from storage import environments as env_rows
from storage import execution_settings, sessions, turns
from storage import interactions as interaction_rows
from storage import items as item_rows
from storage import vaults as vault_rows
from storage.database import Database, Tx
from storage.errors import Conflict as StorageConflict
from storage.rows import dumps

_encoder = msgspec.json.Encoder(order="sorted")


def digest(value: Any) -> str:
    return hashlib.sha256(_encoder.encode(msgspec.to_builtins(value))).hexdigest()


def _messages(value: str | list[InputMessageParam]) -> list[dict[str, Any]]:
    if isinstance(value, str):
        if not value:
            raise InvalidRequest("input must not be empty.", "input")
        return [{"role": "user", "content": [{"type": "input_text", "text": value}]}]
    if not value:
        raise InvalidRequest("input must contain at least one message.", "input")
    result = []
    for index, message in enumerate(value):
        content = msgspec.to_builtins(message.content)
        if not content:
            raise InvalidRequest("A message needs content.", f"input[{index}].content")
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
        on_input: Callable[[str], None],
        environments: Environments | None = None,
        providers: ModelProviders | None = None,
    ) -> None:
        self._environments = environments
        self._providers = providers or ModelProviders(None)
        self._db = db
        self._recorder = recorder
        self._ids = ids
        self._clock = clock
        self._on_work = on_work
        self._on_cancel = on_cancel
        self._on_input = on_input

    def _host(self, project_id: str) -> dict[str, Any]:
        """The confinement in force for the session's commands; where commands cannot be
        confined and the project is not trusted, the session's commands are denied."""
        if self._environments is None:
            return {}
        grants = self._environments.grants
        host: dict[str, Any] = {"confinement": grants.confinement}
        if not grants.commands_allowed(project_id):
            host["tool_policy"] = {"run_command": "deny"}
        return host

    async def create_session(
        self, project_id: str, body: SessionCreate, idempotency_key: str | None
    ) -> tuple[str, bool]:
        """Create a session (and its first turn when input is given).

        Return (session_id, created); `created` is False when an earlier request with the
        same idempotency key and body already created it.
        """
        environment: dict[str, Any] = msgspec.to_builtins(body.environment)
        env_type = environment.get("type")
        if env_type not in ("none", "openai_hosted", "self_hosted"):
            raise InvalidRequest(
                "environment.type must be one of none, openai_hosted, self_hosted.",
                "environment.type",
            )
        if env_type == "none" and set(environment) != {"type"}:
            raise InvalidRequest(
                "An environment of type none takes no other fields.", "environment"
            )
        has_input = body.input is not UNSET and body.input is not None
        if not has_input and (
            env_type == "none" or (body.stream is True and env_type != "self_hosted")
        ):
            raise InvalidRequest("This session requires initial input.", "input")
        messages = _messages(body.input) if body.input is not UNSET and body.input else []
        hosted = (
            await self._hosted(project_id, environment) if env_type == "openai_hosted" else None
        )
        metadata = agent_config.check_metadata(None if body.metadata is UNSET else body.metadata)
        vault_ids = [] if body.vault_ids in (UNSET, None) else list(body.vault_ids)
        if vault_ids:
            missing = await self._db.read(
                partial(vault_rows.missing_vaults, project_id=project_id, vault_ids=vault_ids)
            )
            if missing:
                raise NotFound(
                    param=f"vault_ids[{vault_ids.index(missing[0])}]",
                )
        request_hash = digest(body)
        now = self._clock.now()

        if body.agent_id is not UNSET:
            wanted: str = body.agent_id
            saved = await self._db.read(lambda r: agent_rows.get(r, project_id, wanted))
            if saved is None:
                raise NotFound(param="agent_id")
            config = dict(saved["config"])
            agent_id = saved["id"]
            if body.agent is not UNSET:
                agent_config.apply_fields(config, body.agent, seal_provider=self._providers.stored)
        else:
            if body.agent is UNSET or body.agent.model is UNSET:
                raise InvalidRequest("agent.model is required without agent_id.", "agent.model")
            config = agent_config.defaults()
            agent_config.apply_fields(config, body.agent, seal_provider=self._providers.stored)
            agent_id = self._ids.new("agent")
        extension: dict[str, Any] = (
            {} if body.x_corebox is UNSET else msgspec.to_builtins(body.x_corebox)
        )
        harness = agent_config.harness_for(
            config,
            default_provider=self._providers.has_default,
            session_provider=extension.get("model_provider") is not None,
        )
        frozen = self._providers.freeze(config, extension, harness)
        provider = frozen.public if frozen is not None else None
        notes = features.check(
            harness,
            features.protocol_of(harness, provider),
            features.needed(config, environment, messages),
        )
        if extension.get("tool_policy") is not None:
            agent_config.check_extension(
                {"tool_policy": extension["tool_policy"]}, "x_corebox", None
            )
        policy = extension.get("tool_policy") or (config.get("x_corebox") or {}).get("tool_policy")
        frozen_settings = {
            "model_provider": provider,
            "tool_policy": policy,
            **self._host(project_id),
        }
        session_id = self._ids.new("sess")

        async def job(tx: Tx) -> tuple[str, bool]:
            if idempotency_key is not None:
                earlier = await sessions.by_idempotency_key(tx, project_id, idempotency_key)
                if earlier is not None:
                    if earlier["request_hash"] != request_hash or earlier["deleted_at"]:
                        raise IdempotencyConflict(
                            "This idempotency key was used with a different request."
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
                    "vault_ids": vault_ids,
                    "idempotency_key": idempotency_key,
                    "request_hash": request_hash,
                },
            )
            await execution_settings.freeze(
                tx,
                session_id,
                frozen_settings,
                frozen.sealed_key if frozen is not None else None,
                notes,
            )
            if env_type != "none":
                await self._bind_environment(
                    tx, project_id, session_id, env_type, environment, hosted
                )
            await self._recorder.emit_session(tx, session_id, "agent.session.created")
            key = idempotency_key or self._ids.new("idem")
            if messages:
                await self._start_turn(tx, session_id, agent_id, messages, key, request_hash, 0)
            return session_id, True

        result = await self._db.write(job)
        self._on_work()
        return result

    async def _hosted(
        self, project_id: str, environment: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]] | str:
        """Validate a hosted environment before the transaction: an existing environment's
        id, or the inline configuration to create one."""
        if self._environments is None:
            raise InvalidRequest("Environments are not available.", "environment.type")
        existing = environment.get("environment_id")
        if existing is not None:
            if set(environment) - {"type", "environment_id"}:
                raise InvalidRequest(
                    "environment_id cannot be combined with other configuration.",
                    "environment.environment_id",
                )
            row = await self._db.read(lambda r: env_rows.get(r, project_id, str(existing)))
            if row is None or row["type"] != "openai_hosted":
                raise NotFound(param="environment.environment_id")
            return str(row["id"])
        if environment.get("environment_template_id"):
            raise InvalidRequest(
                "Environment templates cannot be applied in this build yet.",
                "environment.environment_template_id",
                code="unsupported_or_invalid_configuration",
            )
        return await self._environments.hosted_config(project_id, environment, "environment")

    async def _bind_environment(
        self,
        tx: Tx,
        project_id: str,
        session_id: str,
        env_type: str,
        environment: dict[str, Any],
        hosted: tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]] | str | None,
    ) -> None:
        assert self._environments is not None
        if env_type == "self_hosted":
            environment_id = await self._environments.insert_self_hosted(
                tx, project_id, environment, "environment"
            )
        elif isinstance(hosted, str):
            environment_id = hosted
        else:
            assert hosted is not None
            environment_id = await self._environments.insert_hosted(tx, project_id, *hosted)
        row = await env_rows.get_any(tx, environment_id)
        assert row is not None
        files = await env_rows.files_of(tx, environment_id)
        await tx.execute(
            "UPDATE sessions SET environment = ?, environment_id = ? WHERE id = ?",
            (dumps(render.environment(row, files)), environment_id, session_id),
        )

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
        except StorageConflict as exc:
            raise TurnConflict("The session already has an active turn.") from exc
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
        await self._user_items(tx, session_id, turn_id, messages)
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
        inputs: list[str] = []

        async def job(tx: Tx) -> bool:
            session = await sessions.get(tx, project_id, session_id)
            if session is None:
                raise NotFound()
            earlier = await tx.fetchone(
                "SELECT batch_hash FROM turn_inputs WHERE session_id = ? AND idempotency_key = ?"
                " LIMIT 1",
                (session_id, key),
            )
            if earlier is not None:
                if earlier["batch_hash"] != batch_hash:
                    raise IdempotencyConflict("This idempotency key was used with different input.")
                return False
            for position, event in enumerate(events):
                await self._admit_one(
                    tx, session, event, key, batch_hash, position, cancels, inputs
                )
            return True

        admitted = await self._db.write(job)
        if admitted:
            self._on_work()
            for turn_id in cancels:
                self._on_cancel(turn_id)
            for turn_id in inputs:
                self._on_input(turn_id)

    async def _admit_one(
        self,
        tx: Tx,
        session: dict[str, Any],
        event: InputEvent,
        key: str,
        batch_hash: str,
        position: int,
        cancels: list[str],
        inputs: list[str],
    ) -> None:
        session_id = session["id"]
        active = await turns.active(tx, session_id)
        if isinstance(event, MessageInputEvent):
            messages = _messages(event.input)
            if active is None:
                await self._start_turn(
                    tx, session_id, session["agent_id"], messages, key, batch_hash, position
                )
                return
            # One active turn per session: the message joins it. A queued turn takes it as
            # part of its initial input; a running turn is steered with it.
            # Its items are named on the input so an unknown delivery can be marked on them.
            queued = active["status"] == TurnStatus.QUEUED
            item_ids = await self._user_items(tx, session_id, active["id"], messages)
            await self._record_input(
                tx,
                session_id,
                active["id"],
                key,
                position,
                batch_hash,
                "message",
                {"input": messages, "item_ids": item_ids},
                "admitted" if queued else "pending",
            )
            if not queued:
                inputs.append(active["id"])
        elif isinstance(event, CancelInputEvent):
            await self._cancel(tx, session_id, active, key, batch_hash, position, cancels)
        elif isinstance(event, ToolResultInputEvent):
            await self._tool_result(tx, session_id, event, key, batch_hash, position, inputs)
        elif isinstance(event, McpApprovalResultInputEvent):
            await self._answer(
                tx,
                session_id,
                event.request_id,
                "permission",
                {"decision": event.response.decision},
                key,
                batch_hash,
                position,
                inputs,
            )
        else:
            answers = [
                {"question_id": a.question_id, "answers": list(a.answers)}
                for a in event.question_answers
            ]
            await self._answer(
                tx,
                session_id,
                event.ask_id,
                "choice",
                {"question_answers": answers, "cancelled": event.cancelled},
                key,
                batch_hash,
                position,
                inputs,
            )

    async def _user_items(
        self, tx: Tx, session_id: str, turn_id: str, messages: list[dict[str, Any]]
    ) -> list[str]:
        now = self._clock.now()
        ids: list[str] = []
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
            ids.append(str(item["id"]))
        return ids

    async def _cancel(
        self,
        tx: Tx,
        session_id: str,
        active: dict[str, Any] | None,
        key: str,
        batch_hash: str,
        position: int,
        cancels: list[str],
    ) -> None:
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
            return  # an idle session: accepted, no effect
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
            "UPDATE turns SET cancel_requested_at = COALESCE(cancel_requested_at, ?) WHERE id = ?",
            (now, active["id"]),
        )
        if active["status"] == TurnStatus.WAITING:
            # Pending actions drop at once; the cancellation receipt settles the turn.
            await interaction_rows.withdraw_open(tx, active["id"])
            moved = await turns.transition(
                tx, active["id"], (TurnStatus.WAITING,), TurnStatus.IN_PROGRESS
            )
            if moved:
                await self._recorder.emit_session_activity(tx, session_id)
        cancels.append(active["id"])

    async def _tool_result(
        self,
        tx: Tx,
        session_id: str,
        event: ToolResultInputEvent,
        key: str,
        batch_hash: str,
        position: int,
        inputs: list[str],
    ) -> None:
        call = await interaction_rows.call(tx, session_id, event.call_id)
        if call is None:
            raise InvalidRequest(
                f"Unknown pending tool call: {event.call_id}",
                "events",
                code="invalid_request_error",
            )
        if call["turn_id"] != event.turn_id:
            raise InvalidRequest("The tool call belongs to a different Turn.", "events")
        result = {
            "success": event.success,
            "output": msgspec.to_builtins(event.output),
            "error": event.error,
        }
        if call["result"] is not None:
            if call["result"] != result:
                raise Conflict("The tool call already has a different result.")
            return  # the same result again: nothing to do
        turn = await turns.get(tx, call["turn_id"])
        if (
            turn is None
            or turn["status"] not in (TurnStatus.IN_PROGRESS, TurnStatus.WAITING)
            or call["delivery_state"] == "withdrawn"
        ):
            raise TurnConflict("The Turn cannot accept this input in its current state.")
        await interaction_rows.answer_call(tx, session_id, event.call_id, result)
        await self._record_input(
            tx,
            session_id,
            call["turn_id"],
            key,
            position,
            batch_hash,
            "tool_result",
            {"call_id": event.call_id, **result},
            "admitted",
        )
        inputs.append(call["turn_id"])

    async def _answer(
        self,
        tx: Tx,
        session_id: str,
        interaction_id: str,
        kind: str,
        response: dict[str, Any],
        key: str,
        batch_hash: str,
        position: int,
        inputs: list[str],
    ) -> None:
        row = await interaction_rows.interaction(tx, session_id, interaction_id)
        if row is None or row["kind"] != kind:
            raise InvalidRequest(f"Unknown pending request: {interaction_id}", "events")
        if row["response"] is not None:
            if row["response"] != response:
                raise Conflict("The request already has a different answer.")
            return
        if row["state"] != "pending":
            raise TurnConflict("The request is no longer pending.")
        if kind == "choice":
            issued = {q["id"] for q in row["request"].get("questions", [])}
            ids = [a["question_id"] for a in response["question_answers"]]
            if len(set(ids)) != len(ids) or not set(ids) <= issued:
                raise InvalidRequest(
                    "Answers must name issued questions, each at most once.", "events"
                )
            if response["cancelled"] and ids:
                raise InvalidRequest("A cancelled choice carries no answers.", "events")
        await interaction_rows.answer_interaction(tx, session_id, interaction_id, response)
        await self._record_input(
            tx,
            session_id,
            row["turn_id"],
            key,
            position,
            batch_hash,
            kind,
            {"id": interaction_id, **response},
            "admitted",
        )
        inputs.append(row["turn_id"])

    async def update_session(self, session: dict[str, Any], body: SessionUpdate) -> None:
        """Apply a session update; new values apply to turns that start afterwards."""
        if all(getattr(body, f) is UNSET for f in body.__struct_fields__):
            raise InvalidRequest("At least one update field is required")
        agent = None
        if body.agent is not UNSET:
            agent = dict(session["agent"])
            update = body.agent
            if update.model is not UNSET:
                agent["model"] = update.model
            if update.reasoning is not UNSET:
                agent["reasoning"] = (
                    {"effort": None, "summary": None}
                    if update.reasoning is None
                    else {**agent["reasoning"], "effort": update.reasoning.effort}
                )
            if update.service_tier is not UNSET:
                agent["service_tier"] = update.service_tier or "auto"
            if update.tools is not UNSET:
                agent["tools"] = agent_config.normalize_tools(update.tools, "agent.tools")
        notes = None
        if agent is not None:
            provider = execution_settings.settings_of(session).get("model_provider")
            notes = features.check(
                session["harness"],
                features.protocol_of(session["harness"], provider),
                features.needed(agent, session["environment"], []),
            )
        metadata = None
        if body.metadata is not UNSET:
            metadata = agent_config.check_metadata(body.metadata)
        options = dict(session.get("options") or {})
        for field in ("prompt_cache_options", "review", "spend_control"):
            value = getattr(body, field)
            if value is not UNSET:
                options[field] = value

        async def job(tx: Tx) -> None:
            await sessions.update(
                tx, session["id"], agent=agent, metadata=metadata, options=options
            )
            if notes is not None:
                await execution_settings.set_notes(tx, session["id"], notes)

        await self._db.write(job)

    async def delete_session(self, session: dict[str, Any]) -> None:
        """Delete only a durably idle or failed session with nothing pending."""

        async def job(tx: Tx) -> bool:
            return await sessions.delete(tx, session["id"], self._clock.now())

        if not await self._db.write(job):
            raise Conflict(
                "session must be durably idle or failed without required actions before deletion"
            )

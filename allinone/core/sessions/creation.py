"""Session creation: everything is checked and decided before the transaction (a `Plan`);
the transaction writes the session, its frozen execution settings, its environment and,
with initial input, its first turn."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import msgspec
from msgspec import UNSET

from allinone.core import agents as agent_config
from allinone.core import features
from allinone.core.agent_versions import Deployments
from allinone.core.archive import refuse_archived
from allinone.core.errors import InvalidRequest, NotFound
from allinone.core.ids import Clock, Ids
from allinone.core.model_providers import ModelProviders
from allinone.core.recorder import Recorder
from allinone.core.sessions import revisions
from allinone.core.sessions.batch import InputBatch, Slot
from allinone.core.sessions.hosted import Binding, Hosted
from allinone.core.sessions.idempotency import check_session_replay, digest
from allinone.core.sessions.inputs import messages_of
from allinone.core.sessions.options import options_of
from allinone.core.sessions.writer import Writer
from allinone.core.shapes.models import SessionCreate
from storage import sessions
from storage import vaults as vault_rows
from storage.database import Database, Tx

ENVIRONMENT_TYPES = ("none", "openai_hosted", "self_hosted")


@dataclass(frozen=True)
class Plan:
    """A session creation decided before its transaction."""

    session_id: str
    agent_id: str
    agent_version: int | None
    harness: str
    config: dict[str, Any]
    environment: dict[str, Any]
    hosted: Hosted | None
    messages: list[dict[str, Any]]
    metadata: Any
    vault_ids: list[str]
    request_hash: str
    settings: dict[str, Any]
    sealed_key: Any
    notes: Any
    options: dict[str, Any]


def _checked_environment(body: SessionCreate) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    environment: dict[str, Any] = msgspec.to_builtins(body.environment)
    env_type = environment.get("type")
    if env_type not in ENVIRONMENT_TYPES:
        raise InvalidRequest(
            "environment.type must be one of none, openai_hosted, self_hosted.",
            "environment.type",
        )
    if env_type == "none" and set(environment) != {"type"}:
        raise InvalidRequest("An environment of type none takes no other fields.", "environment")
    if body.stream_options is not UNSET and body.stream is not True:
        raise InvalidRequest(
            "stream_options is only allowed when stream is true.", "stream_options"
        )
    has_input = body.input is not UNSET and body.input is not None
    if not has_input and (
        env_type == "none" or (body.stream is True and env_type != "self_hosted")
    ):
        raise InvalidRequest("This session requires initial input.", "input")
    # An empty string or list is refused (by `messages_of`), never taken as no input.
    messages = [] if body.input is UNSET or body.input is None else messages_of(body.input)
    return environment, messages


class Creation:
    def __init__(
        self,
        db: Database,
        writer: Writer,
        recorder: Recorder,
        ids: Ids,
        clock: Clock,
        binding: Binding,
        providers: ModelProviders,
        host: Callable[[str], dict[str, Any]],
        offered: Callable[[str], bool] = lambda kind: True,
        prices: Mapping[str, tuple[float, float]] | None = None,
        trusted: Callable[[str], bool] = lambda project_id: True,
    ) -> None:
        """`offered(kind)`: whether a connected Runtime declares the harness available;
        `trusted(project_id)`: whether the owner trusts the project (a CLI harness needs
        it)."""
        self._db = db
        self._offered = offered
        self._trusted = trusted
        self._prices = dict(prices or {})
        self._deployments = Deployments(db, ids, clock)
        self._writer = writer
        self._recorder = recorder
        self._ids = ids
        self._clock = clock
        self._binding = binding
        self._providers = providers
        self._host = host

    async def create(
        self, project_id: str, body: SessionCreate, idempotency_key: str | None
    ) -> tuple[str, bool]:
        """Return (session_id, created); `created` is False when an earlier request with
        the same idempotency key and body already created it."""
        plan = await self._plan(project_id, body)

        async def job(tx: Tx) -> tuple[str, bool]:
            if idempotency_key is not None:
                earlier = await sessions.by_idempotency_key(tx, project_id, idempotency_key)
                if earlier is not None:
                    return check_session_replay(earlier, plan.request_hash), False
            await self._write(tx, project_id, plan, idempotency_key)
            return plan.session_id, True

        return await self._db.write(job)

    async def _plan(self, project_id: str, body: SessionCreate) -> Plan:
        environment, messages = _checked_environment(body)
        hosted = None
        if environment["type"] == "openai_hosted":
            hosted = await self._binding.check_hosted(project_id, environment)
        metadata = agent_config.check_metadata(None if body.metadata is UNSET else body.metadata)
        vault_ids = [] if body.vault_ids in (UNSET, None) else list(body.vault_ids)
        await self._check_vaults(project_id, vault_ids)
        request_hash = digest(body)
        extension: dict[str, Any] = (
            {} if body.x_corebox is UNSET else msgspec.to_builtins(body.x_corebox)
        )
        agent_id, version, config = await self._agent(project_id, body, extension)
        harness = agent_config.harness_for(
            config,
            default_provider=self._providers.has_default,
            session_provider=extension.get("model_provider") is not None,
        )
        # What the request itself gets wrong is named before what this host lacks.
        frozen = self._providers.freeze(config, extension, harness)
        agent_config.check_trusted(harness, self._trusted(project_id))
        agent_config.check_installed(harness, self._offered)
        provider = frozen.public if frozen is not None else None
        notes = features.check(
            harness,
            features.protocol_of(harness, provider),
            features.needed(config, environment, messages),
        )
        settings = {
            "model_provider": provider,
            "tool_policy": _tool_policy(extension, config),
            **self._host(project_id),
        }
        price = self._price(provider, config)
        if price is not None:
            settings["price"] = price
        if extension.get("turn_deadline_seconds") is not None:
            settings["turn_deadline_seconds"] = extension["turn_deadline_seconds"]
        return Plan(
            session_id=self._ids.new("sess"),
            agent_id=agent_id,
            agent_version=version,
            harness=harness,
            config=config,
            environment=environment,
            hosted=hosted,
            messages=messages,
            metadata=metadata,
            vault_ids=vault_ids,
            request_hash=request_hash,
            settings=settings,
            sealed_key=frozen.sealed_key if frozen is not None else None,
            notes=notes,
            options=options_of(body),
        )

    def _price(self, provider: Any, config: dict[str, Any]) -> dict[str, Any] | None:
        """The owner's price of the model the session runs (its budget's unit is cents
        when there is one)."""
        model = ((provider or {}).get("model") or "") or str(config.get("model") or "")
        found = self._prices.get(model)
        if found is None:
            return None
        return {"model": model, "input": found[0], "output": found[1]}

    async def _check_vaults(self, project_id: str, vault_ids: list[str]) -> None:
        if not vault_ids:
            return
        missing = await self._db.read(
            partial(vault_rows.missing_vaults, project_id=project_id, vault_ids=vault_ids)
        )
        if missing:
            raise NotFound(param=f"vault_ids[{vault_ids.index(missing[0])}]")

    async def _agent(
        self, project_id: str, body: SessionCreate, extension: dict[str, Any]
    ) -> tuple[str, int | None, dict[str, Any]]:
        """The session's agent, its pinned version and configuration: a saved one at the
        version named by `x_corebox.agent_version` or `x_corebox.deployment` (default
        `latest`), with `agent` fields applied over it; or one defined inline."""
        seal = self._providers.stored
        version = extension.pop("agent_version", None)
        deployment = extension.pop("deployment", None)
        if body.agent_id is not UNSET:
            saved, number, stored = await self._deployments.resolve(
                project_id, body.agent_id, version, deployment
            )
            refuse_archived("agent", saved)
            config = dict(stored)
            if body.agent is not UNSET:
                agent_config.apply_fields(config, body.agent, seal_provider=seal)
            return str(saved["id"]), number, config
        if version is not None or deployment is not None:
            raise InvalidRequest(
                "A version or deployment can be named only with agent_id.",
                "x_corebox.agent_version" if version is not None else "x_corebox.deployment",
            )
        if body.agent is UNSET or body.agent.model is UNSET:
            raise InvalidRequest("agent.model is required without agent_id.", "agent.model")
        config = agent_config.defaults()
        agent_config.apply_fields(config, body.agent, seal_provider=seal)
        return self._ids.new("agent"), None, config

    async def _write(
        self, tx: Tx, project_id: str, plan: Plan, idempotency_key: str | None
    ) -> None:
        now = self._clock.now()
        agent = agent_config.session_agent(plan.agent_id, plan.config)
        await sessions.insert(
            tx,
            {
                "id": plan.session_id,
                "project_id": project_id,
                "agent_id": plan.agent_id,
                "agent_version": plan.agent_version,
                "harness": plan.harness,
                "created_at": now,
                "agent": agent,
                "options": plan.options,
                "environment": {"type": "none"},
                "metadata": plan.metadata,
                "vault_ids": plan.vault_ids,
                "idempotency_key": idempotency_key,
                "request_hash": plan.request_hash,
                # Frozen for the session's executions in the row itself.
                "execution_settings": plan.settings,
                "sealed_model_key": plan.sealed_key,
                "capability_notes": plan.notes,
            },
        )
        await revisions.write_first(tx, plan.session_id, agent, plan.options, plan.settings, now)
        if plan.environment["type"] != "none":
            await self._binding.bind(tx, project_id, plan.session_id, plan.environment, plan.hosted)
        await self._recorder.emit_session(tx, plan.session_id, "agent.session.created")
        if plan.messages:
            batch = InputBatch(plan.session_id, idempotency_key, plan.request_hash)
            await self._writer.start_turn(tx, Slot(batch, 0), plan.agent_id, plan.messages)


def _tool_policy(extension: dict[str, Any], config: dict[str, Any]) -> Any:
    if extension.get("tool_policy") is not None:
        agent_config.check_extension({"tool_policy": extension["tool_policy"]}, "x_corebox", None)
    return extension.get("tool_policy") or (config.get("x_corebox") or {}).get("tool_policy")

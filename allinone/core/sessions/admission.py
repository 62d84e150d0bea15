"""The entry point for sessions and their inputs: it composes creation, inputs and
changes, runs each admission in one transaction, and tells the orchestrator what to do
only after the commit (`on_work`, `on_cancel`, `on_input`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from msgspec import UNSET

from allinone.core import overlays
from allinone.core.environments import Environments
from allinone.core.ids import Clock, Ids
from allinone.core.model_providers import ModelProviders
from allinone.core.recorder import Recorder
from allinone.core.sessions.batch import InputBatch
from allinone.core.sessions.changes import Changes
from allinone.core.sessions.creation import Creation
from allinone.core.sessions.hosted import Binding
from allinone.core.sessions.idempotency import digest
from allinone.core.sessions.inputs import Inputs
from allinone.core.sessions.writer import Writer
from allinone.core.shapes.models import (
    InputEvent,
    SessionCreate,
    SessionUpdate,
)
from storage.database import Database, Tx


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
        offered: Callable[[str], bool] = lambda kind: True,
        prices: Mapping[str, tuple[float, float]] | None = None,
    ) -> None:
        """`offered(kind)`: whether a connected Runtime declares that harness available;
        sessions on a CLI harness nobody offers are refused at creation."""
        self._db = db
        self._environments = environments
        self._on_work = on_work
        self._on_cancel = on_cancel
        self._on_input = on_input
        writer = Writer(recorder, ids, clock)
        self._creation = Creation(
            db,
            writer,
            recorder,
            ids,
            clock,
            Binding(db, environments),
            providers or ModelProviders(None),
            self._host,
            offered,
            prices,
            self._trusted,
        )
        self._inputs = Inputs(writer, recorder, clock)
        self._changes = Changes(db, clock, recorder)

    def _trusted(self, project_id: str) -> bool:
        return self._environments is None or self._environments.grants.trusted(project_id)

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
        if body.input not in (UNSET, None, ""):
            agent_id = None if body.agent_id is UNSET else body.agent_id
            await self._check_kill_switch(project_id, agent_id)
        result = await self._creation.create(project_id, body, idempotency_key)
        self._on_work()
        return result

    async def admit_inputs(
        self,
        project_id: str,
        session_id: str,
        events: list[InputEvent],
        idempotency_key: str | None,
    ) -> None:
        """Admit an ordered batch of 0-64 inputs atomically; replay-safe by key. While a
        kill switch covers the session, only cancellations are admitted (`Inputs.admit`
        checks it in the admission's transaction)."""
        batch = InputBatch(session_id, idempotency_key, digest(events))

        async def job(tx: Tx) -> bool:
            batch.cancels.clear()
            batch.steered.clear()
            return await self._inputs.admit(tx, project_id, batch, events)

        if await self._db.write(job):
            self._on_work()
            for turn_id in batch.cancels:
                self._on_cancel(turn_id)
            for turn_id in batch.steered:
                self._on_input(turn_id)

    async def _check_kill_switch(self, project_id: str, agent_id: str | None) -> None:
        refusal = await self._db.read_now(lambda r: overlays.input_refusal(r, project_id, agent_id))
        if refusal is not None:
            raise refusal

    async def update_session(self, session: dict[str, Any], body: SessionUpdate) -> None:
        """Apply a session update; new values apply to turns that start afterwards."""
        await self._changes.update(session, body)

    async def delete_session(self, session: dict[str, Any]) -> None:
        """Delete only a durably idle or failed session with nothing pending."""
        await self._changes.delete(session)

"""Session update and delete."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from allinone.core import agents as agent_config
from allinone.core import features
from allinone.core.errors import Conflict, InvalidRequest
from allinone.core.ids import Clock
from allinone.core.recorder import Recorder
from allinone.core.sessions import revisions
from allinone.core.sessions.options import options_of
from allinone.core.shapes.models import SessionUpdate
from storage import execution_settings, sessions
from storage.database import Database, Tx


def _updated_agent(session: dict[str, Any], body: SessionUpdate) -> dict[str, Any] | None:
    if body.agent is UNSET:
        return None
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
    return agent


class Changes:
    def __init__(self, db: Database, clock: Clock, recorder: Recorder) -> None:
        self._db = db
        self._recorder = recorder
        self._clock = clock

    async def update(self, session: dict[str, Any], body: SessionUpdate) -> None:
        """Apply a session update; new values apply to turns that start afterwards. A
        change of the agent or the options writes the session's next configuration
        revision."""
        if all(getattr(body, f) is UNSET for f in body.__struct_fields__):
            raise InvalidRequest("At least one update field is required")
        agent = _updated_agent(session, body)
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
        options = {**(session.get("options") or {}), **options_of(body)}

        revised = agent is not None or options != (session.get("options") or {})
        now = self._clock.now()

        async def job(tx: Tx) -> None:
            await sessions.update(
                tx, session["id"], agent=agent, metadata=metadata, options=options
            )
            if notes is not None:
                await execution_settings.set_notes(tx, session["id"], notes)
            if revised:
                # A new configuration revision; earlier ones stay as they were.
                await revisions.write_next(tx, session, agent or session["agent"], options, now)

        await self._db.write(job)

    async def delete(self, session: dict[str, Any]) -> None:
        """Delete only a durably idle or failed session with nothing pending."""

        async def job(tx: Tx) -> bool:
            deleted = await sessions.delete(tx, session["id"], self._clock.now())
            if deleted:  # open event streams of the session end once this commits
                self._recorder.wake(tx, session["id"])
            return deleted

        if not await self._db.write(job):
            raise Conflict(
                "session must be durably idle or failed without required actions before deletion"
            )

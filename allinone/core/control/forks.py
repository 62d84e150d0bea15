"""Fork: a new session copied from an existing one up to a turn (or an item).

What a fork copies, in one transaction:

    the session row        agent, harness, metadata, vaults, options and the frozen
                           execution settings (the pinned configuration), in the
                           caller's project; `x_corebox.forked_from` names the parent
    the revisions          every configuration revision of the parent, under the same
                           numbers (the session row's `config_revision` names one)
    the turns              up to and including the fork turn, with new ids (without
                           their workspace snapshots, which stay the parent's)
    the items              up to the fork point (the fork turn's last item, or the
                           named item), with new ids, in the same order
    the subagents          each one a copied `create_subagent_call` item opened, with
                           its turns and items, under new ids, the fork's own (the
                           copied call names the copy; see `subagents.forking`)
    hidden turns           the parent's rewinds, as one marker over the copied turns
    the environment        `openai_hosted`: a new managed environment, the fork's own
                           (purged with it), whose workspace starts from the snapshot
                           the Runtime took at the end of the fork turn (refused when
                           there is none, or it is no longer kept); `self_hosted`:
                           the same directory, shared; `none`: none

The fork turn must have finished. Nothing of the parent changes. An `Idempotency-Key`
makes a retried fork answer the session the first attempt made.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from allinone.core import render
from allinone.core.errors import Conflict, IdempotencyConflict, InvalidRequest, NotFound
from allinone.core.gateway.workspace import wire_uuid
from allinone.core.ids import Clock, Ids
from allinone.core.recorder import Recorder
from allinone.core.subagents import forking
from runtime.proto import limits
from storage import environments as env_rows
from storage import forks, items, rewinds, session_revisions, sessions, turns
from storage.database import Database, Tx
from storage.rows import dumps, loads

# Fork keys live beside session-creation keys in the project's namespace, kept apart.
KEY_PREFIX = "fork:"


class NoSnapshot(Conflict):
    default_code = "workspace_snapshot_unavailable"


@dataclass(frozen=True)
class ForkPoint:
    turn: dict[str, Any]
    position: int | None  # the last copied item's position; None: the turn has no item


class Forks:
    def __init__(self, db: Database, recorder: Recorder, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._recorder = recorder
        self._ids = ids
        self._clock = clock

    async def fork(
        self,
        project_id: str,
        session_id: str,
        turn_id: str | None,
        item_id: str | None,
        idempotency_key: str | None = None,
    ) -> tuple[str, bool]:
        """Fork the session; returns (the new session's id, whether this call made it).
        A repeated `idempotency_key` with the same request answers the fork it made
        (False); with another request it is an IdempotencyConflict."""
        request = hashlib.sha256(
            dumps({"session_id": session_id, "turn_id": turn_id, "item_id": item_id}).encode()
        ).hexdigest()
        key = None if idempotency_key is None else f"{KEY_PREFIX}{idempotency_key}"

        async def job(tx: Tx) -> tuple[str, bool]:
            if key is not None:
                earlier = await sessions.by_idempotency_key(tx, project_id, key)
                if earlier is not None:
                    if earlier.get("fork_request") != request:
                        raise IdempotencyConflict(
                            "This Idempotency-Key was used for another request."
                        )
                    return str(earlier["id"]), False
            parent = await sessions.get(tx, project_id, session_id)
            if parent is None:
                raise NotFound(param="session_id")
            point = await self._point(tx, session_id, turn_id, item_id)
            made = await self._copy(tx, project_id, parent, point, (key, request))
            return made, True

        return await self._db.write(job)

    async def _point(
        self, tx: Tx, session_id: str, turn_id: str | None, item_id: str | None
    ) -> ForkPoint:
        item = None
        if item_id is not None:
            item = await forks.raw(tx, "items", item_id)
            if item is None or item["session_id"] != session_id:
                raise NotFound("No such item in this session.", param="item_id")
            if turn_id is not None and item["turn_id"] != turn_id:
                raise InvalidRequest("The item does not belong to that turn.", "item_id")
            turn_id = str(item["turn_id"])
        if turn_id is None:
            turn = await forks.latest_finished_turn(tx, session_id)
            if turn is None:
                raise Conflict("The session has no finished turn to fork from.")
        else:
            turn = await forks.raw(tx, "turns", turn_id)
            if turn is None or turn["session_id"] != session_id:
                raise NotFound("No such turn in this session.", param="turn_id")
        if turn["status"] not in turns.ENDED:
            raise Conflict("The turn has not finished; fork at a finished turn.")
        position = item["position"] if item else await forks.last_position(tx, turn["id"])
        return ForkPoint(turn, position)

    async def _copy(
        self,
        tx: Tx,
        project_id: str,
        parent: dict[str, Any],
        point: ForkPoint,
        request: tuple[str | None, str],
    ) -> str:
        """Write the fork; `request` is its (idempotency key, request digest)."""
        new_id = self._ids.new("sess")
        now = self._clock.now()
        environment = await self._environment(tx, parent, point.turn)
        stored = await forks.raw(tx, "sessions", parent["id"])
        assert stored is not None
        await forks.copy(
            tx,
            "sessions",
            stored,
            {
                "id": new_id,
                "project_id": project_id,
                "created_at": now,
                "last_active_at": now,
                "event_seq": 0,
                "idempotency_key": request[0],
                "fork_request": request[1],
                "deleted_at": None,
                "forked_from_session_id": parent["id"],
                "forked_from_turn_id": point.turn["id"],
                # A CLI harness's native session is the parent's alone: sharing it would
                # let both sessions append to one transcript.
                "native_session_id": None,
                **environment,
            },
        )
        await session_revisions.copy_all(tx, parent["id"], new_id)
        turn_ids = await self._copy_turns(tx, parent["id"], new_id, point.turn)
        kept = await self._kept_items(tx, parent["id"], point.position, turn_ids)
        calls = [_payload(row) for row in kept if row["type"] == forking.CALL]
        opened = set().union(*(forking.opened_by(payload) for payload in calls))
        subagent_ids = await forking.copy_subagents(
            tx, self._ids, parent["id"], new_id, turn_ids, opened
        )
        await self._copy_items(tx, new_id, kept, turn_ids, subagent_ids)
        await self._copy_hidden(tx, parent["id"], new_id, turn_ids, now)
        await self._recorder.emit_session(tx, new_id, "agent.session.created")
        return new_id

    async def _copy_turns(
        self, tx: Tx, parent_id: str, new_id: str, turn: dict[str, Any]
    ) -> dict[str, str]:
        mapping: dict[str, str] = {}
        for row in await forks.turns_through(tx, parent_id, turn):
            mapping[row["id"]] = self._ids.new("turn")
            await forks.copy(
                tx,
                "turns",
                row,
                {
                    "id": mapping[row["id"]],
                    "session_id": new_id,
                    "fencing_token": None,
                    "device_id": None,
                    "lease_expires_at": None,
                    # Snapshots belong to the parent's environment: a fork of this fork
                    # can copy a workspace only as one of its own turns left it.
                    "workspace_snapshot": None,
                },
            )
        return mapping

    async def _kept_items(
        self, tx: Tx, parent_id: str, position: int | None, turn_ids: dict[str, str]
    ) -> list[dict[str, Any]]:
        """The parent's items the fork keeps, as stored."""
        if position is None:
            return []
        found = await forks.items_through(tx, parent_id, position)
        return [row for row in found if row["turn_id"] in turn_ids]

    async def _copy_items(
        self,
        tx: Tx,
        new_id: str,
        kept: list[dict[str, Any]],
        turn_ids: dict[str, str],
        subagent_ids: dict[str, str],
    ) -> None:
        for row in kept:
            prefix = str(row["id"]).split("_", 1)[0]
            overrides: dict[str, Any] = {
                "id": self._ids.new(prefix),
                "session_id": new_id,
                "turn_id": turn_ids[row["turn_id"]],
            }
            if row["type"] == forking.CALL:
                payload = forking.remapped(_payload(row), subagent_ids)
                overrides["payload"] = items.stored_payload(tx, payload)
            await forks.copy(tx, "items", row, overrides)

    async def _copy_hidden(
        self, tx: Tx, parent_id: str, new_id: str, turn_ids: dict[str, str], now: int
    ) -> None:
        hidden = await rewinds.hidden_turn_ids(tx, parent_id)
        copied = [turn_ids[turn] for turn in turn_ids if turn in hidden]
        if copied:
            await rewinds.insert(
                tx,
                {
                    "id": self._ids.new("rwd"),
                    "session_id": new_id,
                    "turns": len(copied),
                    "hidden_turn_ids": copied,
                    "created_at": now,
                },
            )

    async def _environment(
        self, tx: Tx, parent: dict[str, Any], turn: dict[str, Any]
    ) -> dict[str, Any]:
        """The fork's environment columns: a new managed environment seeded from the
        turn's workspace snapshot, or the parent's own (self_hosted, none)."""
        environment_id = parent.get("environment_id")
        if not environment_id or parent["environment"]["type"] != "openai_hosted":
            return {}
        snapshot = turn.get("workspace_snapshot")
        kept = await forks.recent_snapshots(tx, environment_id, limits.MAX_WORKSPACE_SNAPSHOTS)
        if not snapshot or snapshot not in kept:
            raise NoSnapshot(
                f"No workspace snapshot exists for turn {turn['id']}: the workspace is "
                f"snapshotted as each turn ends and the last {limits.MAX_WORKSPACE_SNAPSHOTS} "
                "snapshots of an environment are kept.",
            )
        source = await forks.raw(tx, "environments", environment_id)
        assert source is not None
        new_env = self._ids.new("env")
        await forks.copy(
            tx,
            "environments",
            source,
            {
                "id": new_env,
                "wire_id": wire_uuid(new_env),
                "status": "ready",
                "initialization": "complete",
                "secrets": "{}",
                "failure": None,
                "created_at": self._clock.now(),
                "idempotency_key": None,
                "request_hash": None,
                "seed_wire_id": source["wire_id"],
                "seed_snapshot": snapshot,
                "owner": "session",  # the fork's own, whoever owns the parent's
            },
        )
        row = await env_rows.get_any(tx, new_env)
        assert row is not None
        return {
            "environment_id": new_env,
            "environment": dumps(render.environment(row, [])),
        }


def _payload(row: dict[str, Any]) -> dict[str, Any]:
    """A stored item row's payload, decoded."""
    payload: dict[str, Any] = loads(items.payload_text(row["payload"]))
    return payload

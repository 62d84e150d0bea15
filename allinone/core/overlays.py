"""Safety overlays: owner controls evaluated at every safe point on top of the pinned
configurations, without changing them.

Kinds (`value` in brackets):
- `kill_switch` (`pause` | `cancel`): new input to the project's (or one agent's)
  sessions is refused with 409 `kill_switch_active` and their queued turns are held
  unclaimed until it is cleared; `cancel` also cancels every active turn at once (the
  same path as a client's cancel input), `pause` pauses every running one by a pause
  command. Cleared with `resume`, a `pause` one resumes the turns it paused
  (`allinone.core.control.kill_switch`).
- `tool_disabled` (a tool name: a function, a workspace tool such as `run_command`, or
  an MCP `server_label`): turns that start while it is active get, for a call of that
  tool, the structured result `{"error": "tool_disabled", "tool", "overlay_version"}`;
  in a running turn, a permission request for that tool is denied at once with the same
  result (`orchestration/projector.py`).
- `egress` (`loopback_only`): a turn whose model endpoint or HTTP MCP servers are not on
  a loopback address fails with `egress_refused` before any connection is attempted;
  the harness runs workspace commands without network where the platform allows it
  (`harness_config.egress`, `runtime.confinement.Sandbox.without_network`).

Every change is a versioned row with its actor, reason and time (`storage.overlays`);
clearing one keeps it, marked cleared.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from allinone.core.errors import Conflict, InvalidRequest, NotFound
from allinone.core.ids import Clock, Ids
from storage import agents as agent_rows
from storage import overlays as overlay_rows
from storage import tenancy
from storage.database import Database, Tx
from storage.rows import Queryable

log = logging.getLogger(__name__)

# The kinds and the values each takes; the API's request body is typed by the same names.
Kind = Literal["kill_switch", "tool_disabled", "egress"]
KillAction = Literal["pause", "cancel"]
EgressPolicy = Literal["loopback_only"]
KINDS: tuple[str, ...] = get_args(Kind)
KILL_ACTIONS: tuple[str, ...] = get_args(KillAction)
EGRESS_POLICIES: tuple[str, ...] = get_args(EgressPolicy)
MAX_TOOL_NAME = 64
KILL_CODE = "kill_switch_active"
EGRESS_CODE = "egress_refused"
MAX_REASON = 500
# Workspace tools the model calls by one name that Core sees under another.
TOOL_ALIASES = {"shell": "run_command"}
# (project_id, [(session_id, turn_id)], overlay_id) -> acts on those turns for the kill
# switch `overlay_id` (cancels, pauses or resumes them), after the commit; returns the
# commands it sent, in the API's shape (none for a cancel).
ActOnTurns = Callable[[str, list[tuple[str, str]], str], Awaitable[list[dict[str, Any]]]]


def check_value(kind: str, value: Any) -> Any:
    if kind == "kill_switch" and value in KILL_ACTIONS:
        return value
    if kind == "egress" and value in EGRESS_POLICIES:
        return value
    if kind == "tool_disabled" and isinstance(value, str) and 0 < len(value) <= MAX_TOOL_NAME:
        return value
    expected = {
        "kill_switch": "pause or cancel",
        "tool_disabled": "a tool name or MCP server_label",
        "egress": "loopback_only",
    }.get(kind, "")
    raise InvalidRequest(f"value of a {kind} overlay must be {expected}.", "value")


def view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "object": "x_corebox.overlay",
        "version": row["version"],
        "kind": row["kind"],
        "project_id": row["project_id"],
        "agent_id": row["agent_id"],
        "value": row["value"],
        "reason": row["reason"],
        "actor": row["actor"],
        "created_at": row["created_at"],
        "cleared_at": row["cleared_at"],
        "cleared_by": row["cleared_by"],
    }


def kill_switch(active: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((row for row in active if row["kind"] == "kill_switch"), None)


def disabled_tools(active: list[dict[str, Any]]) -> dict[str, int]:
    """Tool name (or MCP server_label) -> the version of the overlay disabling it."""
    return {
        str(row["value"]): int(row["version"]) for row in active if row["kind"] == "tool_disabled"
    }


def disabled_result(name: str, version: int) -> str:
    """The tool output the model gets for a call of a disabled tool."""
    return json.dumps({"error": "tool_disabled", "tool": name, "overlay_version": version})


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def egress_refusal(
    active: list[dict[str, Any]], session: dict[str, Any], provider_url: str | None
) -> str | None:
    """Why the session's next turn may not start under a `loopback_only` overlay."""
    overlay = next((row for row in active if row["kind"] == "egress"), None)
    if overlay is None:
        return None
    if provider_url and not is_loopback(provider_url):
        return f"The model endpoint is not loopback (egress overlay version {overlay['version']})."
    for tool in session["agent"].get("tools", []):
        transport = tool.get("transport") or {}
        if (
            tool.get("type") == "mcp"
            and transport.get("type") == "http"
            and not is_loopback(str(transport.get("server_url") or ""))
        ):
            return (
                f"MCP server {tool['server_label']!r} is not loopback"
                f" (egress overlay version {overlay['version']})."
            )
    return None


async def input_refusal(q: Queryable, project_id: str, agent_id: str | None) -> Conflict | None:
    """The refusal of new input while a kill switch covers the project or the agent."""
    active = await overlay_rows.active(q, project_id, agent_id)
    overlay = kill_switch(active)
    if overlay is None:
        return None
    return Conflict(
        f"A kill switch ({overlay['value']}, overlay version {overlay['version']}) refuses"
        " new input until it is cleared.",
        code=KILL_CODE,
    )


async def _check_scope(r: Queryable, project_id: str, agent_id: str | None) -> None:
    """Refuse an overlay's scope unless the project exists and, when the overlay is
    narrowed to an agent, the project knows that agent (`storage.agents.known`)."""
    if await tenancy.get_project(r, project_id) is None:
        raise NotFound(param="project_id")
    if agent_id is not None and not await agent_rows.known(r, project_id, agent_id):
        raise NotFound(
            f"The project has no agent {agent_id!r}: neither a saved agent nor the agent"
            " of one of its sessions.",
            param="agent_id",
        )


class Overlays:
    """Setting and clearing overlays (owner operations)."""

    def __init__(
        self,
        db: Database,
        ids: Ids,
        clock: Clock,
        cancel_turns: ActOnTurns | None = None,
        on_change: Callable[[], None] | None = None,
        pause_turns: ActOnTurns | None = None,
        resume_turns: ActOnTurns | None = None,
    ) -> None:
        """`cancel_turns` cancels the turns a `cancel` kill switch ends, `pause_turns`
        pauses (at their next safe point) those a `pause` kill switch stops, and
        `resume_turns` resumes those it paused when it is cleared with `resume`;
        `on_change` is told after every committed change (held turns may run again)."""
        self._db = db
        self._ids = ids
        self._clock = clock
        self._act = {"cancel": cancel_turns, "pause": pause_turns}
        self._resume = resume_turns
        self._on_change = on_change

    async def set(
        self,
        kind: str,
        project_id: str,
        agent_id: str | None,
        value: Any,
        reason: str,
        actor: str,
    ) -> dict[str, Any]:
        if kind not in KINDS:
            raise InvalidRequest("kind must be kill_switch, tool_disabled or egress.", "kind")
        value = check_value(kind, value)
        if not reason.strip() or len(reason) > MAX_REASON:
            raise InvalidRequest(f"reason must be 1-{MAX_REASON} characters.", "reason")
        await self._db.read(lambda r: _check_scope(r, project_id, agent_id))
        overlay_id = self._ids.new("ovl")
        row = {
            "id": overlay_id,
            "project_id": project_id,
            "agent_id": agent_id,
            "kind": kind,
            "value": value,
            "reason": reason,
            "actor": actor,
            "created_at": self._clock.now(),
        }

        async def job(tx: Tx) -> list[dict[str, Any]]:
            await overlay_rows.insert(tx, row)
            if kind != "kill_switch":
                return []
            turns = await overlay_rows.active_turns(tx, project_id, agent_id)
            # A pause leaves queued turns as they are: the switch holds them unclaimed
            # until it is cleared, and then they run (a pause command would keep them).
            return [t for t in turns if value == "cancel" or t["status"] != "queued"]

        victims = await self._db.write(job)
        log.info("overlay %s set: %s on project %s", overlay_id, kind, project_id)
        if self._on_change is not None:
            self._on_change()
        act = self._act.get(value) if kind == "kill_switch" else None
        if victims and act is not None:
            turns = [(str(v["session_id"]), str(v["turn_id"])) for v in victims]
            await act(project_id, turns, overlay_id)
        return view(await self._get(overlay_id))

    async def clear(self, overlay_id: str, actor: str, resume: bool = False) -> dict[str, Any]:
        """Clear an active overlay. With `resume` (a `pause` kill switch only), the turns
        it paused that stand paused by it resume too, each by a resume command; the
        answer then lists those commands under `resumed`."""
        now = self._clock.now()

        async def job(tx: Tx) -> tuple[dict[str, Any], list[dict[str, Any]]]:
            row = await overlay_rows.get(tx, overlay_id)
            if row is None:
                raise NotFound()
            if resume and (row["kind"], row["value"]) != ("kill_switch", "pause"):
                raise InvalidRequest("resume applies only to a pause kill switch.", "resume")
            if not await overlay_rows.clear(tx, overlay_id, actor, now):
                raise Conflict("The overlay is already cleared.")
            return row, await overlay_rows.paused_by(tx, row) if resume else []

        row, paused = await self._db.write(job)
        log.info("overlay %s cleared", overlay_id)
        if self._on_change is not None:
            self._on_change()
        shown = view({**row, "cleared_at": now, "cleared_by": actor})  # as `clear` wrote it
        if resume:
            turns = [(str(p["session_id"]), str(p["turn_id"])) for p in paused]
            act = self._resume
            shown["resumed"] = await act(row["project_id"], turns, overlay_id) if act else []
        return shown

    async def listing(self, include_cleared: bool) -> list[dict[str, Any]]:
        if include_cleared:
            rows = await self._db.read(lambda r: overlay_rows.history(r, 1000))
        else:
            rows = await self._db.read(overlay_rows.active)
        return [view(row) for row in rows]

    async def _get(self, overlay_id: str) -> dict[str, Any]:
        row = await self._db.read(lambda r: overlay_rows.get(r, overlay_id))
        if row is None:
            raise NotFound()
        return row

"""What a fork carries of the subagents: a copy of each subagent its copied items
opened, with its turns and items, under new ids in the fork.

A fork copies the root turns and items it keeps with new ids; a `create_subagent_call`
item among them names the subagent it opened (`x_corebox.subagent_id`), so the fork
carries that subagent too: it is the fork's own (`session_id` is the fork's), its
turns and items are copied as the parent has them, and the copied call item names the
copy. Every id the fork shows is the fork's and resolves through it. A subagent opened
by another subagent comes along with its parent; one opened after the fork point stays
the parent's alone. Rows written before `x_corebox.subagent_id` existed named the
subagent in `agent_id`; a copy of one names the copy there instead.
"""

from __future__ import annotations

from typing import Any

from allinone.core.ids import Ids
from storage import forks
from storage.database import Tx

CALL = "create_subagent_call"


def opened_by(payload: dict[str, Any]) -> set[str]:
    """The ids a `create_subagent_call` payload may name its subagent by."""
    extension = payload.get("x_corebox") or {}
    return {str(v) for v in (extension.get("subagent_id"), payload.get("agent_id")) if v}


def remapped(payload: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    """The call payload naming the fork's copies instead of the parent's subagents."""
    body = dict(payload)
    if body.get("agent_id") in mapping:
        body["agent_id"] = mapping[body["agent_id"]]
    extension = dict(body.get("x_corebox") or {})
    if extension.get("subagent_id") in mapping:
        extension["subagent_id"] = mapping[extension["subagent_id"]]
        body["x_corebox"] = extension
    return body


async def copy_subagents(
    tx: Tx,
    ids: Ids,
    parent_id: str,
    new_id: str,
    turn_ids: dict[str, str],
    opened: set[str],
) -> dict[str, str]:
    """Copy into session `new_id` the parent's subagents named in `opened` (and those
    they opened) whose root turn was copied (`turn_ids`: parent turn id -> fork's);
    return parent subagent id -> the copy's id."""
    mapping: dict[str, str] = {}
    for row in await forks.subagents_of(tx, parent_id):
        wanted = row["id"] in opened or row["parent_agent_id"] in mapping
        if not wanted or row["parent_turn_id"] not in turn_ids:
            continue
        mapping[row["id"]] = ids.new("subagent")
        await forks.copy(
            tx,
            "subagents",
            row,
            {
                "id": mapping[row["id"]],
                "session_id": new_id,
                "parent_turn_id": turn_ids[row["parent_turn_id"]],
                "parent_agent_id": mapping.get(row["parent_agent_id"], row["parent_agent_id"]),
            },
        )
        await _copy_turns(tx, ids, row["id"], mapping[row["id"]], new_id)
    return mapping


async def _copy_turns(tx: Tx, ids: Ids, subagent_id: str, copy_id: str, new_id: str) -> None:
    turn_ids: dict[str, str] = {}
    for turn in await forks.subagent_rows(tx, "subagent_turns", subagent_id):
        turn_ids[turn["id"]] = ids.new("turn")
        overrides = {"id": turn_ids[turn["id"]], "subagent_id": copy_id, "session_id": new_id}
        await forks.copy(tx, "subagent_turns", turn, overrides)
    for item in await forks.subagent_rows(tx, "subagent_items", subagent_id):
        prefix = str(item["id"]).split("_", 1)[0]
        overrides = {
            "id": ids.new(prefix),
            "subagent_id": copy_id,
            "turn_id": turn_ids[item["turn_id"]],
        }
        await forks.copy(tx, "subagent_items", item, overrides)

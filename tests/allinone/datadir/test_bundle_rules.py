"""An import checks every row of a bundle before it writes one: each bad bundle below,
made from a real export by one edit, is refused whole with one line naming the row and
the rule, and leaves every table as it was; the same export unedited imports, and
importing it again adds nothing."""

from __future__ import annotations

import copy
import json
import secrets
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from tests.allinone.datadir.test_gc import corebox, hosted_session
from tests.api.support import Surface, surface

__all__ = ["surface"]

HEADER = {"format": "corebox-bundle", "version": 3}
TABLES = (
    "agents",
    "agent_versions",
    "agent_deployments",
    "environments",
    "sessions",
    "turns",
    "items",
    "function_calls",
    "interactions",
    "artifacts",
    "turn_documents",
)


def minted(prefix: str) -> str:
    """An id of the product's form for `prefix`, new."""
    return f"{prefix}_{secrets.token_hex(14)}"


def fresh_session(session: dict[str, Any], agent_id: str | None = None) -> dict[str, Any]:
    """A copy of an exported `session` under new ids (its turns, items and artifacts
    too), run by `agent_id` when given."""
    fresh = copy.deepcopy(session)
    fresh["id"] = minted("sess")
    turns = {t["id"]: minted("turn") for t in fresh["turns"]}
    for turn in fresh["turns"]:
        turn["id"] = turns[turn["id"]]
    for table in ("items", "artifacts", "function_calls", "interactions"):
        for row in fresh[table]:
            row["turn_id"] = turns[row["turn_id"]]
            if "id" in row:
                row["id"] = minted(row["id"].split("_", 1)[0])
    if agent_id is not None:
        fresh["agent_id"] = agent_id
        fresh["agent"] = json.dumps({**json.loads(fresh["agent"]), "id": agent_id})
        for turn in fresh["turns"]:
            turn["agent_id"] = agent_id
    return fresh


def counts(data_dir: Path) -> dict[str, int]:
    with closing(sqlite3.connect(f"file:{data_dir / 'corebox.db'}?mode=ro", uri=True)) as db:
        return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}


def _source(surface: Surface) -> tuple[str, dict[str, Any]]:
    """A project with a saved agent at version 2 that a session ran, and a session in
    an environment of its own; its id and export."""
    source, key = surface.project("source of bad bundles")
    client = surface.client(key)
    agent = client.beta.agents.create(model="scripted", name="first")
    client.beta.agents.update(agent.id, name="second")
    list(
        client.beta.agents.sessions.create(
            agent_id=agent.id, environment={"type": "none"}, input="/say hi", stream=True
        )
    )
    hosted_session(client, {"type": "openai_hosted"})
    status, bundle = surface.core("POST", "/core/v1/export", {"project_id": source})
    assert status == 200, bundle
    return source, bundle


def _edits(exported: dict[str, Any]) -> list[tuple[str, Callable[[dict[str, Any]], None]]]:
    """(what the refusal says, the edit) for each rule, applied to a good bundle whose
    first agent runs its first session."""
    [saved] = [s for s in exported["sessions"] if s["agent_version"] is not None]
    [hosted] = [s for s in exported["sessions"] if s["environment_id"] is not None]

    def version(number: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda b: b["agents"][0]["versions"][number - 1]

    def config_of(b: dict[str, Any], **changed: Any) -> str:
        return json.dumps({**json.loads(b["agents"][0]["config"]), **changed})

    return [
        ("version 2's digest is not its config's", lambda b: version(2)(b).update(
            config=config_of(b, name="edited"))),
        ("deployment latest names version 99", lambda b: b["agents"][0]["deployments"][0].update(
            version=99)),
        ("its current version 3 is not its last, 2", lambda b: b["agents"][0].update(version=3)),
        ("version numbers [1, 1] are not 1 to 2", lambda b: version(2)(b).update(number=1)),
        ("agent ../../etc: its id is not an agent id", lambda b: b["agents"][0].update(
            id="../../etc")),
        ("its version 1's config is refused", lambda b: version(1)(b).update(
            config=json.dumps({"model": 123}), digest=None)),
        ("its config is over the API's 4 MiB", lambda b: b["agents"][0].update(
            config=config_of(b, instructions="x" * (4 * 1024 * 1024)))),
        (f"its agent {saved['agent_id']} is another project's", lambda b: b["sessions"].append(
            fresh_session(saved))),
        ("its status in_progress is not an ended one", lambda b: b["sessions"][0]["turns"][0]
            .update(status="in_progress", completed_at=None)),
        ("its id is on this server already, with another session_id", lambda b: b["sessions"]
            .append({**saved, "id": minted("sess")})),
        ("is in neither the bundle nor this project", lambda b: b["sessions"].append(
            {**fresh_session(hosted), "environment_id": hosted["environment_id"]})),
        ("its settings are refused", lambda b: b["sessions"][0].update(
            metadata=json.dumps({str(n): "v" for n in range(17)}))),
        ("its agent is not its session's", lambda b: b["sessions"][0]["turns"][0].update(
            agent_id=minted("agent"))),
        ("its turn is not one of its session's", lambda b: b["sessions"][0]["items"][0].update(
            turn_id=minted("turn"))),
        ("its id is not an item id", lambda b: b["sessions"][0]["items"][0].update(id="msg_1")),
        ("its id is on this server already, with another config", lambda b: b["agents"].append(
            {**exported["agents"][0], "config": config_of(b, name="changed")})),
        ("the bundle holds its id twice", lambda b: b["sessions"].append(b["sessions"][0])),
        ("two of its items have the same position", lambda b: b["sessions"][0]["items"][1]
            .update(position=b["sessions"][0]["items"][0]["position"])),
        ("its wire_id is environment", lambda b: b.update(environments=[
            {**exported["environments"][0], "id": minted("env")}])),
    ]  # fmt: skip


def test_each_rule_refuses_the_whole_bundle(surface: Surface) -> None:
    _, exported = _source(surface)
    target, _ = surface.project("target of bad bundles")
    path = f"/core/v1/import?project_id={target}"
    [saved] = [s for s in exported["sessions"] if s["agent_version"] is not None]
    agent = {**exported["agents"][0], "id": minted("agent")}
    good = {"header": HEADER, "agents": [agent], "sessions": [fresh_session(saved, agent["id"])]}
    before = counts(surface.server.data_dir)
    for said, edit in _edits(exported):
        bad = copy.deepcopy(good)
        edit(bad)
        status, reply = surface.core("POST", path, bad)
        assert status == 400, (said, reply)
        message = reply["error"]["message"]
        assert message.startswith("the bundle's ") and said in message, (said, message)
        assert "\n" not in message, message
        assert counts(surface.server.data_dir) == before, said
    status, reply = surface.core("POST", path, good)
    assert status == 200, reply
    added = reply["added"]
    assert (added["agents"], added["agent_versions"], added["sessions"]) == (1, 2, 1), added
    assert added["turns"] == len(saved["turns"]) and added["items"] == len(saved["items"])
    status, reply = surface.core("POST", path, good)
    assert status == 200 and sum(reply["added"].values()) == 0, reply


def test_the_command_refuses_with_one_line_and_status_1(surface: Surface, tmp_path: Path) -> None:
    _, exported = _source(surface)
    target, _ = surface.project("target of a bad bundle")
    [saved] = [s for s in exported["sessions"] if s["agent_version"] is not None]
    # A new session reusing the ids of another session's turns and items.
    moved = {**saved, "id": minted("sess")}
    bundle = tmp_path / "bad.bundle"
    bundle.write_text(json.dumps({"header": HEADER, "sessions": [moved]}))
    before = counts(surface.server.data_dir)
    done = corebox(surface.server.data_dir, "import", str(bundle), "--project", target)
    assert done.returncode == 1, done
    turn = saved["turns"][0]["id"]
    wanted = f"the bundle's turn {turn}: its id is on this server already, with another session_id"
    assert wanted in done.stderr and done.stderr.strip().count("\n") == 0, done.stderr
    assert counts(surface.server.data_dir) == before

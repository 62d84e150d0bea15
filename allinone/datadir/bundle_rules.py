"""What an import checks of a bundle before it writes anything: each rule refuses the
whole bundle with one line naming the row and the rule (`BundleError`).

- Ids are the product's for their kind: `agent_`, `sess_`, `turn_`, `env_`, `envtpl_`,
  `auto_`, `file_` or `artifact_` and 28 lowercase hex digits as `allinone.core.ids`
  mints them (an item's prefix is its type's: `msg_`, `fco_`, `rs_`...); a function
  call's or interaction's id, which the Runtime names, is 1-256 printable characters
  without a space or a slash.
- An agent's configuration and each of its versions' pass the validation
  `POST /v1/agents` applies (`AgentCreate`, `allinone.core.agents`), within its 4 MiB;
  a session's agent, metadata and options pass `sessions.create`'s, its settings within
  its 16 MiB, and its harness is one corebox has.
- A version's `digest` is its configuration's (`agent_versions.config_digest`); version
  numbers run 1, 2, ... without a gap or a repeat, the agent's `version` is the last,
  and each deployment names one of them.
- Turns have ended (completed, failed or cancelled): an export leaves out a session
  with an active turn, and a turn that was running elsewhere cannot go on here.
- References stay inside the target project: a session's saved agent (and its pinned
  version), its environment, an artifact's environment, a turn's agent, and the turn
  an item, function call, interaction or artifact belongs to resolve to a row the
  import adds or to a row of the target project, never another project's; a fork's
  parent session and an automation's target session may be gone, but never another
  project's.
- A row whose id is already on the server, in any project, must be as the bundle has
  it (a child row as it would be written, under the session the bundle puts it in):
  a bundle that would leave part of itself out is refused. Rows equal to the server's
  are left as they are, so importing a bundle again adds nothing.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from allinone.core import agents as agent_config
from allinone.core.agent_versions import config_digest
from allinone.core.errors import Refused
from allinone.core.model_providers import parse as parse_provider
from allinone.core.sessions.options import options_of
from allinone.core.shapes.models import (
    MAX_AGENT_BODY_BYTES,
    MAX_SESSION_BODY_BYTES,
    AgentCreate,
    SessionAgentParam,
    SessionUpdate,
)
from storage import items
from storage.turn_documents import VIEW

# Each table's id prefix, as Core mints it.
PREFIXES = {
    "agents": "agent",
    "environments": "env",
    "environment_templates": "envtpl",
    "automations": "auto",
    "files": "file",
    "sessions": "sess",
    "turns": "turn",
    "artifacts": "artifact",
}
NAMES = {
    "agents": "agent",
    "environments": "environment",
    "environment_templates": "environment template",
    "automations": "automation",
    "files": "file",
    "sessions": "session",
    "turns": "turn",
    "items": "item",
    "artifacts": "artifact",
    "function_calls": "function call",
    "interactions": "interaction",
}
_DIGITS = "[0-9a-f]{28}"
_ITEM_ID = re.compile(f"[a-z]{{1,16}}_{_DIGITS}")
_RUNTIME_ID = re.compile(r"[!-.0-~]{1,256}")  # printable ASCII, no space, no slash
ENDED = ("completed", "failed", "cancelled")
TOP = ("agents", "environments", "environment_templates", "automations", "files", "sessions")
# Child tables of a session keyed by their own id, and those keyed within the session.
CHILDREN = ("turns", "items", "artifacts")
KEYED = {"function_calls": "call_id", "interactions": "interaction_id"}
# What a row carries that is not one of its columns (rows under it, a body).
_NOT_COLUMNS = frozenset(
    {"versions", "deployments", *CHILDREN, *KEYED, "content_base64", "content", "blob"}
)
_SESSION_SETTINGS = ("agent", "environment", "metadata", "options", "execution_settings")


class BundleError(Exception):
    """An export or import cannot complete; the message is the one line the user sees."""


def check(conn: sqlite3.Connection, document: dict[str, Any], project_id: str) -> None:
    """Refuse `document` (whose tables are lists of objects) unless every rule of the
    module docstring holds; `conn` is read inside the import's transaction."""
    seen: set[tuple[str, str, Any]] = set()
    for table, scope, row in _all_rows(document):
        _check_id(table, row)
        key = (table, scope, row[KEYED.get(table, "id")])
        if key in seen:
            raise _refuse(table, key[2], "the bundle holds its id twice")
        seen.add(key)
    for agent in document.get("agents", []):
        _check_agent(agent)
    for session in document.get("sessions", []):
        _check_session(session)
    known = Known(conn, document, project_id)
    known.check_same(document)
    _check_references(document, known)


def _refuse(table: str, row_id: Any, rule: str) -> BundleError:
    return BundleError(f"the bundle's {NAMES[table]} {_shown(row_id)}: {rule}")


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _all_rows(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Each row with its table and, for a function call or interaction (whose id is
    its session's own), its session's id."""
    for table in TOP:
        for row in document.get(table, []):
            yield table, "", row
    for session in document.get("sessions", []):
        for table in (*CHILDREN, *KEYED):
            for row in session.get(table, []):
                yield table, str(session.get("id")) if table in KEYED else "", row


def _check_id(table: str, row: dict[str, Any]) -> None:
    if table in KEYED:
        value = row.get(KEYED[table])
        if not isinstance(value, str) or _RUNTIME_ID.fullmatch(value) is None:
            raise _refuse(table, value, "its id is not 1-256 printable characters")
        return
    value = row.get("id")
    if table == "items":
        pattern, what = _ITEM_ID, "an item id (a type's prefix, _ and 28 hex digits)"
    else:
        pattern = re.compile(f"{PREFIXES[table]}_{_DIGITS}")
        what = f"a{'n' if table in ('agents', 'environments', 'automations', 'artifacts') else ''}"
        what += f" {NAMES[table]} id ({PREFIXES[table]}_ and 28 hex digits)"
    if not isinstance(value, str) or pattern.fullmatch(value) is None:
        raise _refuse(table, value, f"its id is not {what}")


def _check_agent(agent: dict[str, Any]) -> None:
    """Its configuration and its versions' as `POST /v1/agents` takes them, each version's
    digest its configuration's, and numbers, current version and pointers that agree."""
    agent_id = agent["id"]
    _check_config(agent_id, "config", agent.get("config"))
    versions = agent.get("versions") or []
    if not versions:
        return  # a bundle written before agents had versions: version 1 is its config
    numbers = [v.get("number") for v in versions]
    if sorted(n for n in numbers if isinstance(n, int)) != list(range(1, len(numbers) + 1)):
        raise _refuse(
            "agents", agent_id, f"its version numbers {numbers} are not 1 to {len(numbers)}"
        )
    if agent.get("version") != len(numbers):
        rule = f"its current version {agent.get('version')} is not its last, {len(numbers)}"
        raise _refuse("agents", agent_id, rule)
    for version in versions:
        where = f"version {version['number']}'s config"
        config = _check_config(agent_id, where, version.get("config"))
        digest = version.get("digest")
        if config is not None and digest is not None and digest != config_digest(config):
            raise _refuse(
                "agents", agent_id, f"version {version['number']}'s digest is not its config's"
            )
    names = [d.get("name") for d in agent.get("deployments") or []]
    if len(set(map(str, names))) != len(names):
        raise _refuse("agents", agent_id, "it names a deployment twice")
    for deployment in agent.get("deployments") or []:
        if deployment.get("version") not in numbers:
            rule = f"deployment {_shown(deployment.get('name'))} names version"
            raise _refuse(
                "agents", agent_id, f"{rule} {deployment.get('version')}, which it has not"
            )


def _check_config(agent_id: str, where: str, text: Any) -> dict[str, Any] | None:
    """The stored configuration `text` as `POST /v1/agents` would take it (None when it
    is not text: the write refuses its type)."""
    if not isinstance(text, str):
        return None
    if len(text.encode()) > MAX_AGENT_BODY_BYTES:
        raise _refuse("agents", agent_id, f"its {where} is over the API's 4 MiB for an agent")
    config = _object(text, lambda rule: _refuse("agents", agent_id, f"its {where} {rule}"))
    try:
        body = msgspec.convert(config, AgentCreate)
        agent_config.harness_for(agent_config.from_create(body, seal_provider=_provider_as_stored))
    except msgspec.ValidationError as exc:
        raise _refuse("agents", agent_id, f"its {where} is refused: {exc}") from exc
    except Refused as exc:
        raise _refuse("agents", agent_id, f"its {where} is refused: {exc.message}") from exc
    return config


def _object(text: str, refuse: Any) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise refuse("is not JSON text") from exc
    if not isinstance(value, dict):
        raise refuse("is not a JSON object")
    return value


def _provider_as_stored(value: Any, param: str) -> dict[str, Any]:
    """An agent's `model_provider` as stored: valid, its key sealed (never in clear)."""
    public, api_key = parse_provider(value, param)
    if api_key is not None:
        raise Refused("a model provider's api_key is never carried in clear", param=param)
    if isinstance(value.get("sealed_api_key"), str):
        public["sealed_api_key"] = value["sealed_api_key"]
    return public


def _check_session(session: dict[str, Any]) -> None:
    """Its settings as `sessions.create` takes them; its turns ended; its rows under
    turns of its own."""
    session_id = session["id"]
    texts = [session.get(c) for c in _SESSION_SETTINGS]
    if sum(len(t.encode()) for t in texts if isinstance(t, str)) > MAX_SESSION_BODY_BYTES:
        raise _refuse(
            "sessions", session_id, "its settings are over the API's 16 MiB for a session"
        )
    harness = session.get("harness")
    if isinstance(harness, str) and harness not in agent_config.HARNESSES:
        raise _refuse(
            "sessions", session_id, f"its harness {_shown(harness)} is not one corebox has"
        )
    _check_session_settings(session)
    turns = {t["id"]: t for t in session.get("turns", [])}
    for turn in turns.values():
        if turn.get("status") not in ENDED:
            rule = (
                f"its status {_shown(turn.get('status'))} is not an ended one ({', '.join(ENDED)})"
            )
            raise _refuse("turns", turn["id"], rule)
        if turn.get("agent_id") != session.get("agent_id"):
            raise _refuse("turns", turn["id"], "its agent is not its session's")
    positions = [i.get("position") for i in session.get("items", [])]
    if len(set(map(str, positions))) != len(positions):
        raise _refuse("sessions", session_id, "two of its items have the same position")
    for table in ("items", "artifacts", *KEYED):
        for row in session.get(table, []):
            if row.get("turn_id") not in turns:
                row_id = row.get(KEYED.get(table, "id"))
                raise _refuse(table, row_id, "its turn is not one of its session's in the bundle")


def _check_session_settings(session: dict[str, Any]) -> None:
    """The session's agent, metadata and options as `sessions.create` takes them."""
    session_id = session["id"]

    def refuse(rule: str) -> BundleError:
        return _refuse("sessions", session_id, rule)

    try:
        if isinstance(session.get("agent"), str):
            view = _object(session["agent"], lambda rule: refuse(f"its agent {rule}"))
            if not isinstance(view.pop("name", None), str | None) or view.pop("id", None) is None:
                raise refuse("its agent has no id, or a name that is not text")
            param = msgspec.convert(view, SessionAgentParam)
            agent_config.apply_fields(agent_config.defaults(), param, seal_provider=None)
        settings: dict[str, Any] = {}
        if isinstance(session.get("metadata"), str):
            settings["metadata"] = _object(
                session["metadata"], lambda r: refuse(f"its metadata {r}")
            )
        if isinstance(session.get("options"), str):
            settings.update(_object(session["options"], lambda r: refuse(f"its options {r}")))
        body = msgspec.convert(settings, SessionUpdate)
        options_of(body)
        agent_config.check_metadata(body.metadata or None)
    except msgspec.ValidationError as exc:
        raise refuse(f"its settings are refused: {exc}") from exc
    except Refused as exc:
        raise refuse(f"its settings are refused: {exc.message}") from exc


class Known:
    """The server's rows the bundle names, read once: those with the bundle's ids, in any
    project, and those its rows refer to."""

    def __init__(self, conn: sqlite3.Connection, document: dict[str, Any], project_id: str):
        self.project_id = project_id
        self._conn = conn
        sessions = document.get("sessions", [])
        self.bundle_ids = {t: {r["id"] for r in document.get(t, [])} for t in TOP}
        self.rows: dict[str, dict[str, sqlite3.Row]] = {
            table: self._by_id(table, [r["id"] for r in document.get(table, [])]) for table in TOP
        }
        for table in CHILDREN:
            ids = [r["id"] for s in sessions for r in s.get(table, [])]
            self.rows[table] = self._by_id(VIEW if table == "turns" else table, ids)
        referred = {
            "agents": [s.get("agent_id") for s in sessions],
            "environments": [s.get("environment_id") for s in sessions]
            + [a.get("environment_id") for s in sessions for a in s.get("artifacts", [])],
            "sessions": [s.get("forked_from_session_id") for s in sessions]
            + [a.get("target_session_id") for a in document.get("automations", [])],
        }
        wires = [e.get("wire_id") for e in document.get("environments", [])]
        self.wires = self._column("environments", "wire_id", wires)
        for table, ids in referred.items():
            wanted = [i for i in ids if isinstance(i, str) and i not in self.rows[table]]
            self.rows[table].update(self._by_id(table, wanted))

    def _by_id(self, table: str, ids: Iterable[str]) -> dict[str, sqlite3.Row]:
        wanted = sorted(set(ids))
        found: dict[str, sqlite3.Row] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for row in self._conn.execute(f"SELECT * FROM {table} WHERE id IN ({marks})", chunk):
                found[row["id"]] = row
        return found

    def _column(self, table: str, column: str, values: Iterable[Any]) -> dict[Any, str]:
        """The id of the row of `table` holding each of `values` in `column`."""
        wanted = sorted({v for v in values if isinstance(v, str)})
        found: dict[Any, str] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            sql = f"SELECT id, {column} FROM {table} WHERE {column} IN ({marks})"
            found.update((row[column], row["id"]) for row in self._conn.execute(sql, chunk))
        return found

    def added(self, table: str, row_id: Any) -> bool:
        """Whether the import adds the bundle's row `row_id` of `table` (it is new here)."""
        return row_id not in self.rows[table]

    def home(self, table: str, row_id: Any) -> str | None:
        """The project the server's row `row_id` of a top-level `table` is in, if any."""
        row = self.rows[table].get(row_id)
        return None if row is None else str(row["project_id"])

    def versions(self, agent_id: str) -> list[int]:
        found = self._conn.execute(
            "SELECT number FROM agent_versions WHERE agent_id = ? ORDER BY number", (agent_id,)
        )
        return [int(r["number"]) for r in found]

    def check_same(self, document: dict[str, Any]) -> None:
        """Refuse a row whose id the server has with other content (see the module
        docstring); rows under an agent or session the server has are compared too."""
        for table in TOP:
            for row in document.get(table, []):
                self._same(table, row, self.rows[table].get(row["id"]))
        for environment in document.get("environments", []):
            holder = self.wires.get(environment.get("wire_id"))
            if holder is not None and holder != environment["id"]:
                rule = f"its wire_id is environment {holder}'s on this server"
                raise _refuse("environments", environment["id"], rule)
        for agent in document.get("agents", []):
            if not self.added("agents", agent["id"]):
                self._same_versions(agent)
        for session in document.get("sessions", []):
            for table in CHILDREN:
                for row in session.get(table, []):
                    child = {**row, "session_id": session["id"]}
                    self._same(table, child, self.rows[table].get(row["id"]))
            if not self.added("sessions", session["id"]):
                self._same_keyed(session)

    def _same(self, table: str, row: dict[str, Any], stored: sqlite3.Row | None) -> None:
        if stored is None:
            return
        columns = set(stored.keys()) - _NOT_COLUMNS - {"project_id"}
        for column in sorted(columns & set(row)):
            value = stored[column]
            if table == "items" and column == "payload":
                value = items.payload_text(value)
            if row[column] != value:
                key = row.get(KEYED.get(table, "id"))
                rule = f"its id is on this server already, with another {column}"
                raise _refuse(table, key, rule)

    def _same_versions(self, agent: dict[str, Any]) -> None:
        rows = self._conn.execute(
            "SELECT number, config, digest, created_at FROM agent_versions WHERE agent_id = ?",
            (agent["id"],),
        )
        stored = {r["number"]: r for r in rows}
        for version in agent.get("versions") or []:
            self._same("agents", {"id": agent["id"], **version}, stored.get(version["number"]))

    def _same_keyed(self, session: dict[str, Any]) -> None:
        for table, key in KEYED.items():
            for row in session.get(table, []):
                stored = self._conn.execute(
                    f"SELECT * FROM {table} WHERE session_id = ? AND {key} = ?",
                    (session["id"], row[key]),
                ).fetchone()
                self._same(table, {**row, "session_id": session["id"]}, stored)


def _check_references(document: dict[str, Any], known: Known) -> None:
    """Refuse a row the import adds that names a row of another project, or a saved
    agent, version or environment that is in neither the bundle nor the target project."""
    bundle_versions = {
        a["id"]: [v.get("number") for v in a.get("versions") or []] or [1]
        for a in document.get("agents", [])
    }
    for session in document.get("sessions", []):
        if not known.added("sessions", session["id"]):
            continue  # left as it is, with everything under it
        _check_session_agent(session, known, bundle_versions)
        environments = [session.get("environment_id")]
        environments += [a.get("environment_id") for a in session.get("artifacts", [])]
        for environment_id in environments:
            if environment_id is not None and not _in_target(known, "environments", environment_id):
                rule = f"its environment {_shown(environment_id)} is in neither the bundle"
                raise _refuse("sessions", session["id"], f"{rule} nor this project")
        _not_elsewhere(known, "sessions", session["id"], session.get("forked_from_session_id"))
    for automation in document.get("automations", []):
        if known.added("automations", automation["id"]):
            target = automation.get("target_session_id")
            _not_elsewhere(known, "automations", automation["id"], target)


def _in_target(known: Known, table: str, row_id: Any) -> bool:
    """Whether `row_id` of `table` is a row the import adds, or one of the target's."""
    home = known.home(table, row_id)
    if home is not None:
        return home == known.project_id
    return row_id in known.bundle_ids.get(table, set())


def _not_elsewhere(known: Known, table: str, row_id: str, session_id: Any) -> None:
    home = known.home("sessions", session_id)
    if home is not None and home != known.project_id:
        rule = f"it names session {_shown(session_id)} of another project"
        raise _refuse(table, row_id, rule)


def _check_session_agent(
    session: dict[str, Any], known: Known, bundle_versions: dict[str, list[Any]]
) -> None:
    """A session's saved agent is the bundle's or the target project's, at a version it
    has; an inline agent's id names no other project's agent."""
    session_id, agent_id = session["id"], session.get("agent_id")
    home = known.home("agents", agent_id)
    if home is not None and home != known.project_id:
        raise _refuse("sessions", session_id, f"its agent {_shown(agent_id)} is another project's")
    pinned = [session.get("agent_version")]
    pinned += [t.get("agent_version") for t in session.get("turns", [])]
    pinned = [p for p in pinned if p is not None]
    if session.get("agent_version") is None and not pinned:
        return  # an agent defined inline
    if home is not None:
        numbers: list[Any] = known.versions(str(agent_id))
    elif agent_id in bundle_versions:
        numbers = bundle_versions[agent_id]
    else:
        rule = f"its agent {_shown(agent_id)} is in neither the bundle nor this project"
        raise _refuse("sessions", session_id, rule)
    for number in pinned:
        if number not in numbers:
            rule = f"it pins version {_shown(number)} of agent {agent_id}, which is not there"
            raise _refuse("sessions", session_id, rule)

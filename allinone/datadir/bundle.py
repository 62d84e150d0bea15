"""Export and import bundles: a project's agents and sessions carried as one file.

A bundle is one JSON document (UTF-8, keys sorted, no whitespace, rows ordered by id),
so exporting the same data twice gives the same bytes apart from `header.created_at`:

    {"header": {"format": "corebox-bundle", "version": 3, "created_at"},
     "agents": [{...agent row..., "versions": [], "deployments": []}],
     "environments": [...], "sessions": [{...session row..., "turns": [...],
     "items": [...], "function_calls": [...], "interactions": [...],
     "artifacts": [{...row..., "content_base64"}]}],
     "environment_templates": [...], "automations": [...],
     "files": [{...file row...}], "file_bodies": {"<sha256>": "<base64>"},
     "needs_reentry": [{"kind", "id", "what"}]}

Rows carry their columns as readers see them (JSON columns as text; a turn as the
`turns_full` view gives it, an item's payload as its JSON) except the project
(an import writes into the project it is given) and what must not travel: sealed
secrets, run-state tokens, idempotency keys. Secrets are never exported: a session's
sealed model key, an environment's secrets and the vaults a session names are listed in
`needs_reentry` instead (an environment's sealed inputs are listed for every
environment). Sessions with an active turn are left out (listed as such). The
environments carried are those the exported sessions use and, in a whole-project
export, every one the project made through `environments.create` (`owner` `project`),
used or not; each keeps its owner (one from a bundle written before environments had
owners imports as a session's own, the schema's default). Environment templates,
automations and uploaded files (`/v1/files`) are the project's own: carried when the
export is not narrowed to named agents or sessions. A file's row travels without its
body, which is in `file_bodies` under its sha256, once however many files share it.
The sealed parts of templates and automations stay behind (listed in `needs_reentry`):
an imported template has no confidential inputs until they are set again, and an
imported automation keeps its schedule and status but fails each run, naming why,
until its target is updated. Version 1 bundles (without templates and
automations) and version 2 bundles (without files) still import.

Import is idempotent: a row whose id exists is left as it is, so importing twice adds
nothing; an agent or session that exists is left with everything under it (its versions,
or its turns and items), and a session's rows are written under that session whatever
they name. A malformed bundle (a missing field, a value of the wrong type, a row the
store refuses, or one `bundle_rules` refuses: an id not of its kind, a configuration
the API would refuse, a digest not its configuration's, a reference to another
project's row, a turn that has not ended, an id the server has with other content)
imports nothing. A file keeps its id and its body goes where an upload's
would (the blob store at or above its threshold, the database below); a body that does
not match its file's sha256 refuses the whole import. Imported sessions are history that
can take new turns (their journal starts empty). Each agent carries its immutable
`versions` and its `deployments` pointers (not who wrote them, nor the audit of pointer
moves); an agent from a bundle written before agents had versions imports as version 1
behind `latest`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from allinone.datadir import Progress, bundle_rules, no_progress
from allinone.datadir.collection import BLOBS_DIR, DATABASE_FILE
from storage import (
    automations,
    environments,
    execution_settings,
    items,
    templates,
    tenancy,
    turn_documents,
)
from storage import sessions as session_rows
from storage.blobs import BlobStore
from storage.database import check_schema
from storage.journal_dictionary import pack
from storage.rows import DERIVED
from storage.turn_documents import VIEW, digest
from storage.turn_rows import DOCUMENTS, INTERNAL, usage_columns

FORMAT = "corebox-bundle"
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
ACTIVE = ("queued", "in_progress", "waiting")

# Columns that never travel, per table.
DROPPED: dict[str, frozenset[str]] = {
    "agents": frozenset({"project_id"}),
    "sessions": frozenset(
        {
            "project_id",
            "sealed_model_key",
            "idempotency_key",
            "request_hash",
            "event_seq",
            "native_session_id",  # a CLI harness's state on the machine that ran it
        }
    )
    | DERIVED["sessions"],
    "environments": frozenset({"project_id", "secrets", "idempotency_key", "request_hash"}),
    # A turn travels as readers see it (`turns_full`), never in its stored form: the keys
    # of its documents are one database's own.
    "turns": frozenset(
        {"fencing_token", "device_id", "lease_expires_at", "deadline_at_ms", "deadline_left_ms"}
    )
    | INTERNAL,
    "items": frozenset(),
    "function_calls": frozenset(),
    "interactions": frozenset(),
    "artifacts": frozenset({"content", "blob"}),
    "environment_templates": frozenset({"project_id", "sealed_confidential"}),
    "automations": frozenset({"project_id", "sealed_target"}),
    "files": frozenset({"project_id", "content", "blob"}),
}
# What an import stores in place of a sealed column that never travels: nothing sealed.
UNSEALED: dict[str, dict[str, bytes]] = {
    "environment_templates": {"sealed_confidential": b""},
    "automations": {"sealed_target": b""},
}
# Project-level tables a whole-project bundle carries, and what of theirs stays sealed.
PROJECT_TABLES: dict[str, tuple[str, str]] = {
    "environment_templates": (
        "environment_template",
        "environment variables, set-up commands and inline files",
    ),
    "automations": ("automation", "target (its sealed request)"),
}


# Child tables of a session, in the order an import writes them, each with its order.
SESSION_CHILDREN = ("turns", "items", "function_calls", "interactions", "artifacts")
ORDER = {
    "turns": "created_at, id",
    "items": "position",
    "function_calls": "created_at, call_id",
    "interactions": "created_at, interaction_id",
    "artifacts": "created_at, id",
}


BundleError = bundle_rules.BundleError


# The bundle's JSON values a column takes, by the column's declared type.
# (A TEXT column also takes the bytes an item's compacted payload is stored as.)
_TAKES: dict[str, tuple[type, ...]] = {
    "INTEGER": (int,),
    "TEXT": (str, bytes),
    "REAL": (int, float),
}
# How a refusal names a declared type, and a JSON value's kind (`bool` before `int`).
_WANTED = {"INTEGER": "a whole number", "TEXT": "text", "REAL": "a number"}
_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "true or false"),
    (int, "a whole number"),
    (float, "a number"),
    (str, "text"),
    (list, "an array"),
    (dict, "an object"),
)
# The columns that hold a JSON object as text (an array where `_JSON_ARRAYS` says so),
# per table, as their storage modules read them; for a turn, its documents that are JSON
# (not its configuration digest).
_JSON_TEXT: dict[str, tuple[str, ...]] = {
    "turns": ("manifest", "context"),
    "agents": ("config",),
    "agent_versions": ("config",),
    "sessions": (*session_rows.JSON_COLUMNS, *execution_settings.JSON_COLUMNS),
    "environments": environments.JSON_COLUMNS,
    "environment_templates": templates.JSON_COLUMNS,
    "automations": automations.JSON_COLUMNS,
}
_JSON_ARRAYS = {("sessions", "vault_ids"), ("sessions", "capability_notes")}
# A body for the blob store: (its sha256, its bytes).
_Blob = tuple[str, bytes]


# What writing a malformed bundle's rows raises: a missing field, a value of the wrong
# type or shape, a number past 64 bits, a row the store refuses (NOT NULL, CHECK). The
# import is rolled back.
_MALFORMED = (
    KeyError,
    TypeError,
    AttributeError,
    ValueError,
    OverflowError,
    sqlite3.IntegrityError,
    sqlite3.InterfaceError,
    sqlite3.ProgrammingError,
)


def _connect(data_dir: Path) -> sqlite3.Connection:
    path = data_dir / DATABASE_FILE
    if not path.is_file():
        raise BundleError(f"no database in {data_dir}")
    check_schema(path)  # rows are read and written as this build's schema has them
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def _row(table: str, row: sqlite3.Row) -> dict[str, Any]:
    return {k: row[k] for k in row.keys() if k not in DROPPED[table]}  # noqa: SIM118


def export(
    data_dir: Path,
    project_id: str,
    *,
    agents: list[str] | None = None,
    sessions: list[str] | None = None,
    on_progress: Progress = no_progress,
) -> bytes:
    """The bundle of the project's live agents and sessions, or of only those named and
    what the sessions named need (the saved agents they run, the environments they use);
    see `_export`."""
    conn = _connect(data_dir)
    try:
        conn.execute("BEGIN")  # one snapshot for the whole bundle
        blobs = BlobStore(data_dir / BLOBS_DIR)
        bundle = _export(conn, blobs, project_id, agents, sessions, on_progress)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return json.dumps(bundle, sort_keys=True, separators=(",", ":")).encode()


def _export(
    conn: sqlite3.Connection,
    blobs: BlobStore,
    project_id: str,
    agent_ids: list[str] | None,
    session_ids: list[str] | None,
    on_progress: Progress,
) -> dict[str, Any]:
    """The whole project when neither `agent_ids` nor `session_ids` is given; else the
    agents and sessions named, with what those sessions need: the saved agents they run
    and the environments they use."""
    reentry: list[dict[str, str]] = []
    if conn.execute("SELECT 1 FROM projects WHERE id = ?", (project_id,)).fetchone() is None:
        raise BundleError(f"there is no project {project_id}")
    whole_project = agent_ids is None and session_ids is None
    agent_rows = _live(conn, "agents", project_id)
    named = _named(agent_rows, agent_ids, f"project {project_id} has no agent", whole_project)
    session_rows = _named(
        _live(conn, "sessions", project_id),
        session_ids,
        f"project {project_id} has no session",
        whole_project,
    )
    exported = _sessions(conn, blobs, session_rows, reentry, on_progress)
    needed = {r["id"] for r in named} | {s["agent_id"] for s in exported}
    environments = _environments(conn, project_id, exported, whole_project, reentry)
    return {
        "header": {
            "format": FORMAT,
            "version": VERSION,
            "created_at": int(time.time()),
        },
        "agents": [_agent(conn, r) for r in agent_rows if r["id"] in needed],
        "environments": environments,
        "sessions": exported,
        **{
            table: [_sealed_apart(table, r, reentry) for r in _live(conn, table, project_id)]
            for table in PROJECT_TABLES
            if whole_project
        },
        **(_files(conn, blobs, project_id) if whole_project else {}),
        "needs_reentry": sorted(reentry, key=lambda e: (e["kind"], e["id"], e["what"])),
    }


def _sessions(
    conn: sqlite3.Connection,
    blobs: BlobStore,
    rows: list[sqlite3.Row],
    reentry: list[dict[str, str]],
    on_progress: Progress,
) -> list[dict[str, Any]]:
    """The sessions of `rows` with everything under them, less those with an active
    turn (listed in `reentry`)."""
    exported = []
    for index, row in enumerate(rows):
        on_progress(index, len(rows))
        session = _session(conn, blobs, row, reentry)
        if session is not None:
            exported.append(session)
    on_progress(len(rows), len(rows))
    return exported


def _files(conn: sqlite3.Connection, blobs: BlobStore, project_id: str) -> dict[str, Any]:
    """The project's uploaded files, and their bodies by sha256 (each once)."""
    files: list[dict[str, Any]] = []
    bodies: dict[str, str] = {}
    for row in conn.execute(
        "SELECT id, filename, purpose, bytes, sha256, created_at, expires_at, blob FROM files"
        " WHERE project_id = ? ORDER BY id",
        (project_id,),
    ):
        files.append(_row("files", row))
        if row["sha256"] not in bodies:
            bodies[row["sha256"]] = base64.b64encode(_file_body(conn, blobs, row)).decode()
    return {"files": files, "file_bodies": bodies}


def _file_body(conn: sqlite3.Connection, blobs: BlobStore, row: sqlite3.Row) -> bytes:
    if row["blob"]:
        return blobs.read(row["blob"])
    found = conn.execute("SELECT content FROM files WHERE id = ?", (row["id"],)).fetchone()
    return bytes(found["content"] or b"")


def _live(conn: sqlite3.Connection, table: str, project_id: str) -> list[sqlite3.Row]:
    return _select(conn, table, "project_id = ? AND deleted_at IS NULL", project_id)


def _sealed_apart(table: str, row: sqlite3.Row, reentry: list[dict[str, str]]) -> dict[str, Any]:
    kind, what = PROJECT_TABLES[table]
    reentry.append({"kind": kind, "id": row["id"], "what": what})
    return _row(table, row)


def _agent(conn: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
    """An agent with its immutable versions and its deployment pointers."""
    versions = conn.execute(
        "SELECT number, config, digest, created_at FROM agent_versions WHERE agent_id = ?"
        " ORDER BY number",
        (row["id"],),
    )
    deployments = conn.execute(
        "SELECT name, version, pointer_version, updated_at FROM agent_deployments"
        " WHERE agent_id = ? ORDER BY name",
        (row["id"],),
    )
    return {
        **_row("agents", row),
        "versions": [dict(v) for v in versions],
        "deployments": [dict(d) for d in deployments],
    }


def _select(conn: sqlite3.Connection, table: str, where: str, *args: Any) -> list[sqlite3.Row]:
    return list(conn.execute(f"SELECT * FROM {table} WHERE {where} ORDER BY id", args))


def _session(
    conn: sqlite3.Connection, blobs: BlobStore, row: sqlite3.Row, reentry: list[dict[str, str]]
) -> dict[str, Any] | None:
    session_id = row["id"]
    active = conn.execute(
        "SELECT 1 FROM turns WHERE session_id = ? AND status IN (?, ?, ?)", (session_id, *ACTIVE)
    ).fetchone()
    if active is not None:
        reentry.append({"kind": "session", "id": session_id, "what": "skipped: an active turn"})
        return None
    if row["sealed_model_key"]:
        reentry.append({"kind": "session", "id": session_id, "what": "model provider API key"})
    for vault_id in json.loads(row["vault_ids"] or "[]"):
        reentry.append({"kind": "session", "id": session_id, "what": f"vault {vault_id}"})
    session = _row("sessions", row)
    for table in SESSION_CHILDREN:
        source = VIEW if table == "turns" else table
        rows = conn.execute(
            f"SELECT * FROM {source} WHERE session_id = ? ORDER BY {ORDER[table]}", (session_id,)
        )
        session[table] = [_child(table, r, blobs) for r in rows]
    return session


def _child(table: str, row: sqlite3.Row, blobs: BlobStore) -> dict[str, Any]:
    data = _row(table, row)
    if table == "items":  # its JSON, whatever form it is stored in
        data["payload"] = items.payload_text(row["payload"])
    if table == "artifacts":
        body = blobs.read(row["blob"]) if row["blob"] else bytes(row["content"] or b"")
        data["content_base64"] = base64.b64encode(body).decode()
    return data


def _environments(
    conn: sqlite3.Connection,
    project_id: str,
    sessions: list[dict[str, Any]],
    whole_project: bool,
    reentry: list[dict[str, str]],
) -> list[dict[str, Any]]:
    """The environments the exported `sessions` use and, for a whole-project export,
    every one the project owns (made through `environments.create`), used or not."""
    used = {s["environment_id"] for s in sessions if s["environment_id"]}
    return [
        _environment(r, reentry)
        for r in _select(conn, "environments", "project_id = ?", project_id)
        if r["id"] in used or (whole_project and r["owner"] == "project")
    ]


def _environment(row: sqlite3.Row, reentry: list[dict[str, str]]) -> dict[str, Any]:
    # Its confidential inputs (environment variables, set-up commands, initial file
    # bodies) are sealed and never carried, whether or not it had any.
    what = "environment variables, set-up commands and initial files"
    reentry.append({"kind": "environment", "id": row["id"], "what": what})
    return _row("environments", row)


def _named(
    rows: list[sqlite3.Row], ids: list[str] | None, none: str, whole_project: bool
) -> list[sqlite3.Row]:
    """The rows `ids` names; when it is None, all of them in a whole-project export and
    none in a narrowed one. Refuse an id none of them has, so that a mistyped id is not
    exported as an empty bundle."""
    if ids is None:
        return rows if whole_project else []
    missing = sorted(set(ids) - {r["id"] for r in rows})
    if missing:
        raise BundleError(f"{none} {', '.join(missing)} (or it is deleted)")
    return [r for r in rows if r["id"] in ids]


def default_project(data_dir: Path) -> str:
    """The data directory's default project (its first one); refused when it is archived,
    since no other project takes its place."""
    conn = _connect(data_dir)
    try:
        row = conn.execute(tenancy.DEFAULT_PROJECT).fetchone()
    finally:
        conn.close()
    if row is None:
        raise BundleError(f"no project in {data_dir}")
    if row["archived_at"] is not None:
        raise BundleError(
            f"the default project {row['id']} is archived; name a project with --project"
        )
    return str(row["id"])


def import_bundle(
    data_dir: Path, bundle: bytes, project_id: str, *, on_progress: Progress = no_progress
) -> dict[str, int]:
    """Write the bundle's rows into `project_id`; return how many rows each table gained
    (all zero when the bundle was imported before)."""
    try:
        document = json.loads(bundle)
        header = document["header"]
    except (ValueError, KeyError, TypeError) as exc:
        raise BundleError("not a corebox bundle") from exc
    if not isinstance(header, dict):
        raise BundleError("not a corebox bundle")
    if header.get("format") != FORMAT or header.get("version") not in READABLE_VERSIONS:
        raise BundleError("not a corebox bundle this build reads")
    conn = _connect(data_dir)
    blobs = BlobStore(data_dir / BLOBS_DIR)
    writer = _Writer(conn)
    try:
        if conn.execute("SELECT 1 FROM projects WHERE id = ?", (project_id,)).fetchone() is None:
            raise BundleError(f"no project {project_id}")
        conn.execute("BEGIN IMMEDIATE")
        try:
            _check_shape(document)
            bundle_rules.check(conn, document, project_id)
            _import(writer, blobs, document, project_id, on_progress)
        except _MALFORMED as exc:
            raise BundleError(_plainly(exc)) from exc
        # Every row is checked: the bodies of those added go to the blob store now, before
        # the rows that name them commit, so that a refused bundle writes none.
        for sha256, body in writer.blobs:
            blobs.put(sha256, body)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()
    return writer.added


def _check_shape(document: dict[str, Any]) -> None:
    """Refuse a bundle whose tables are not lists of rows (objects), at the top, under
    an agent or under a session, or whose file bodies are not text by digest."""
    tables = ("agents", "environments", *PROJECT_TABLES, "files", "sessions")
    for table in tables:
        _rows(table, document.get(table, []))
    for agent in document.get("agents", []):
        for table in ("versions", "deployments"):
            _rows(f"agents.{table}", agent.get(table) or [])
    for session in document.get("sessions", []):
        for table in SESSION_CHILDREN:
            _rows(f"sessions.{table}", session.get(table, []))
    bodies = document.get("file_bodies", {})
    if not isinstance(bodies, dict) or not all(isinstance(b, str) for b in bodies.values()):
        raise BundleError("the bundle's file_bodies is not an object of base64 text")


def _rows(table: str, rows: Any) -> None:
    if not isinstance(rows, list):
        raise BundleError(f"the bundle's {table} is not a list of rows")
    if not all(isinstance(row, dict) for row in rows):
        raise BundleError(f"the bundle's {table} holds a row that is not an object")


def _plainly(exc: BaseException) -> str:
    """What a refused write says, in the bundle's terms."""
    text = str(exc)
    if isinstance(exc, KeyError):
        return f"a row of the bundle lacks its {text}"
    missing = "NOT NULL constraint failed: "
    if isinstance(exc, sqlite3.IntegrityError) and text.startswith(missing):
        return f"the bundle's {text.removeprefix(missing)} is missing"
    return f"the bundle is malformed: {' '.join(text.split())}"  # a CHECK's SQL is on lines


def _import(
    writer: _Writer,
    blobs: BlobStore,
    document: dict[str, Any],
    project_id: str,
    on_progress: Progress,
) -> None:
    for agent in document.get("agents", []):
        row = {k: v for k, v in agent.items() if k not in ("versions", "deployments")}
        if writer.insert("agents", {**row, "project_id": project_id}):
            _import_versions(writer, agent, project_id)
        else:  # left as it is, with everything under it
            writer.none_added(("agent_versions", "agent_deployments"))
    for environment in document.get("environments", []):
        writer.insert("environments", {**environment, "project_id": project_id})
    for table in PROJECT_TABLES:
        for row in document.get(table, []):
            writer.insert(table, {**row, "project_id": project_id, **UNSEALED[table]})
    bodies: dict[str, str] = document.get("file_bodies", {})
    for row in document.get("files", []):
        writer.insert("files", *_file(row, bodies, blobs, project_id))
    sessions = document.get("sessions", [])
    for index, session in enumerate(sessions):
        on_progress(index, len(sessions))
        row = {k: v for k, v in session.items() if k not in SESSION_CHILDREN}
        if not writer.insert("sessions", {**row, "project_id": project_id}):
            writer.none_added(SESSION_CHILDREN)  # left as it is, with everything under it
            continue
        for table in SESSION_CHILDREN:
            for found in session.get(table, []):
                child = {**found, "session_id": session["id"]}  # under this session only
                if table == "artifacts":
                    child, blob = _artifact(child, blobs)
                    writer.insert(table, child, blob)
                    continue
                if table == "turns":
                    child = _turn(writer.conn, child)
                elif table == "items":  # checked as JSON before it is compacted
                    _check_json("items", "payload", child["payload"])
                    child = {**child, "payload": pack(child["payload"])}
                writer.insert(table, child)
    on_progress(len(sessions), len(sessions))


def _import_versions(writer: _Writer, agent: dict[str, Any], project_id: str) -> None:
    """The agent's versions and pointers as exported; a bundle without them (written
    before agents had versions) gives version 1 and `latest`, as the schema's upgrade
    does."""
    versions = agent.get("versions") or [
        {"number": 1, "config": agent["config"], "digest": None, "created_at": agent["updated_at"]}
    ]
    deployments = agent.get("deployments") or [
        {"name": "latest", "version": 1, "pointer_version": 1, "updated_at": agent["updated_at"]}
    ]
    for version in versions:
        row = {**version, "agent_id": agent["id"], "project_id": project_id, "actor": None}
        writer.insert("agent_versions", row)
    for deployment in deployments:
        writer.insert("agent_deployments", {**deployment, "agent_id": agent["id"]})


def _artifact(child: dict[str, Any], blobs: BlobStore) -> tuple[dict[str, Any], _Blob | None]:
    """An artifact's row with its body where a write's would go, and the body for the
    blob store when it goes there."""
    body = base64.b64decode(child["content_base64"])
    return _placed({k: v for k, v in child.items() if k != "content_base64"}, body, blobs)


def _placed(
    row: dict[str, Any], body: bytes, blobs: BlobStore
) -> tuple[dict[str, Any], _Blob | None]:
    """`row` with `body` where a write's would go: named by its sha256 and returned for
    the blob store at or above its threshold, in the row's `content` below it."""
    if blobs.holds(len(body)):
        return {**row, "content": b"", "blob": row["sha256"]}, (row["sha256"], body)
    return {**row, "content": body, "blob": None}, None


def _turn(conn: sqlite3.Connection, child: dict[str, Any]) -> dict[str, Any]:
    """A turn row in its stored form (`storage.turn_rows`): documents named by key, usage
    by its counts (a checkpoint's configuration digest is the turn's own, not stored)."""
    row = {k: v for k, v in child.items() if k not in DOCUMENTS and k != "usage"}
    for name, column in DOCUMENTS.items():
        body = child.get(name)
        _check_value("turns", name, "TEXT", body)
        row[column] = _document_key(conn, body)
    return {**row, **usage_columns(child.get("usage"))}


def _document_key(conn: sqlite3.Connection, body: str | None) -> int | None:
    """The key of the turn document `body` (stored now if it was not); as
    `storage.turn_documents.key_of` does, on this connection."""
    if body is None:
        return None
    found = digest(body)
    conn.execute(turn_documents.STORE, (found, body))
    row = conn.execute(turn_documents.FIND, (found,)).fetchone()
    return int(row["key"])


def _file(
    row: dict[str, Any], bodies: dict[str, str], blobs: BlobStore, project_id: str
) -> tuple[dict[str, Any], _Blob | None]:
    """A file's row with its body where an upload's would go (checked against its
    sha256 and size first), and the body for the blob store when it goes there."""
    try:
        body = base64.b64decode(bodies[row["sha256"]], validate=True)
    except (KeyError, ValueError) as exc:
        raise BundleError(f"file {row['id']}: its body is missing from the bundle") from exc
    if hashlib.sha256(body).hexdigest() != row["sha256"] or len(body) != row["bytes"]:
        raise BundleError(f"file {row['id']}: its body does not match its sha256")
    return _placed({**row, "project_id": project_id}, body, blobs)


class _Writer:
    """One import's writes on `conn`: how many rows each table gained (`added`), the
    blob-store bodies of the rows added (`blobs`, written only once every row is
    checked), and each table's columns with their declared types, read once (the schema
    does not change inside the import's transaction)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.added: dict[str, int] = {}
        self.blobs: list[_Blob] = []
        self._declared: dict[str, dict[str, str]] = {}

    def insert(self, table: str, row: dict[str, Any], blob: _Blob | None = None) -> bool:
        """Insert the columns the table has; a row whose key exists is left alone
        (False). A row the table refuses otherwise (a missing or wrong value) raises.
        `blob` is the row's body for the blob store, kept if the row is added."""
        declared = self._columns(table)
        names = [c for c in declared if c in row]
        for name in names:
            _check_value(table, name, declared[name], row[name])
        marks = ", ".join("?" * len(names))
        cursor = self.conn.execute(
            f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks}) ON CONFLICT DO NOTHING",
            [row[c] for c in names],
        )
        inserted = max(cursor.rowcount, 0)
        self.added[table] = self.added.get(table, 0) + inserted
        if inserted and blob is not None:
            self.blobs.append(blob)
        return inserted > 0

    def none_added(self, tables: tuple[str, ...]) -> None:
        """Count nothing added to `tables` (rows under a row that was left alone)."""
        for table in tables:
            self.added.setdefault(table, 0)

    def _columns(self, table: str) -> dict[str, str]:
        found = self._declared.get(table)
        if found is None:
            info = self.conn.execute(f"PRAGMA table_info({table})")
            found = self._declared[table] = {r[1]: str(r[2]).upper() for r in info}
        return found


def _check_value(table: str, column: str, declared: str, value: Any) -> None:
    """Refuse a value its column would store but no reader could read: one of another
    type than the column's (SQLite keeps it anyway), or text that is not the JSON the
    column holds."""
    if value is None:
        return  # NOT NULL is the store's to check
    takes = _TAKES.get(declared)
    if takes is not None and not isinstance(value, takes):
        held = next((name for kind, name in _KINDS if isinstance(value, kind)), "another type")
        raise BundleError(f"the bundle's {table}.{column} is {held}, not {_WANTED[declared]}")
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise BundleError(f"the bundle's {table}.{column} holds a number past 64 bits")
    if column in _JSON_TEXT.get(table, ()):
        _check_json(table, column, value)


def _check_json(table: str, column: str, value: Any) -> None:
    """Refuse text that is not the JSON object (or array, `_JSON_ARRAYS`) the column
    holds."""
    try:
        decoded = json.loads(value)
    except (TypeError, ValueError) as exc:
        raise BundleError(f"the bundle's {table}.{column} is not JSON text") from exc
    array = (table, column) in _JSON_ARRAYS
    if not isinstance(decoded, list if array else dict):
        shape = "array" if array else "object"
        raise BundleError(f"the bundle's {table}.{column} is not a JSON {shape}")

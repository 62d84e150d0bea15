"""Environments: creation and validation, initialization through `runtime_prepare`,
environment files written through `workspace_write` and listed through `workspace_read`,
and artifact capture through `workspace_export`. Core never touches a workspace
directory itself; every operation goes to a Runtime over the protocol.

A file write (which replaces a regular file at its path) is reserved durably before any
Runtime work, and what its path held is recorded before its transfer begins; a write
whose outcome is unknown stays `unknown` and blocks further writes to that Environment
(409), because replaying it could change the workspace twice, until the workspace shows
what happened (`file_writes`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import io
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from allinone.core.cluster.membership import Membership
from allinone.core.environment_setup import environment_event
from allinone.core.errors import (
    Conflict,
    IdempotencyConflict,
    InvalidRequest,
    NotFound,
    OutcomeUnknown,
    Refused,
    Unavailable,
)
from allinone.core.file_bodies import FileBodies
from allinone.core.file_writes import PENDING, FileWrites
from allinone.core.gateway.connection import Connection, SendFailed
from allinone.core.gateway.preparations import Preparations
from allinone.core.gateway.registry import Registry
from allinone.core.gateway.setup_progress import DONE, FAILED, SetupProgress
from allinone.core.gateway.workspace import (
    WORKSPACE_CAPABILITIES,
    BindRefused,
    InstalledSkill,
    WorkspaceClient,
    WorkspaceUnavailable,
    wire_uuid,
)
from allinone.core.host_grants import HostGrants
from allinone.core.hosted_support import check_supported
from allinone.core.ids import Clock, Ids
from allinone.core.recorder import Recorder
from allinone.core.sealing import Sealer
from allinone.core.skills.catalog import Catalog
from allinone.core.tasks import cancel_and_wait
from allinone.core.workspace_paths import (
    WORKSPACE,
    check_path,
    reserved,
)
from storage import environments as env_rows
from storage import sessions
from storage.blobs import BlobStore
from storage.database import Database, Tx
from storage.rows import dumps

log = logging.getLogger(__name__)

INLINE_LIMIT = 5 * 1024 * 1024
DEFAULT_HARNESS = "scripted"
# A tree listing reads at most this many directories.
MAX_LISTED_DIRECTORIES = 1000
_UNSAFE_WRITE = (
    "The file could not be written: a file or directory already exists there, or the path "
    "is unsafe."
)
# What a definite refusal of a file write tells the client, by the Runtime's code.
_REFUSED_WRITE = {
    "write_rejected": "The file could not be written: the workspace's file system refused "
    "the path (too long there, or not allowed). Nothing was written.",
}
UNLISTABLE = (
    "path cannot be listed: it is a symbolic link or lies behind one (listings do not "
    "follow links), or it cannot be read."
)
# A write that failed before its transfer began.
_NOT_BEGUN = (
    "The file write did not begin (the workspace could not be read first, or another request "
    "settled it as never begun); nothing was written, and it may be sent again."
)
INTERRUPTED = (
    "initialization interrupted: the server stopped during set-up; its effects are unknown"
)


def decode_inline(data: Any, param: str) -> bytes:
    if not isinstance(data, str):
        raise InvalidRequest("data must be standard base64.", param)
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequest("data must be standard base64.", param) from exc
    if len(raw) > INLINE_LIMIT:
        raise InvalidRequest("Inline files may be at most 5 MiB after decoding.", param)
    return raw


def _regular_files(archive: bytes) -> list[tuple[str, bytes]]:
    """(name, content) of the regular files in a tar archive of outputs/; an archive
    that cannot be read is `WorkspaceUnavailable("outputs_unreadable")`."""
    import tarfile  # here, not at start: only a turn that captures artifacts reads a tar

    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as tar:
            members = [(m, tar.extractfile(m)) for m in tar.getmembers() if m.isreg()]
            return [(m.name, handle.read()) for m, handle in members if handle is not None]
    except tarfile.TarError as exc:
        raise WorkspaceUnavailable("outputs_unreadable") from exc


class Environments:
    def __init__(
        self,
        db: Database,
        registry: Registry,
        ids: Ids,
        clock: Clock,
        remote_url: str = "",
        sealer: Sealer | None = None,
        *,
        grants: HostGrants,
        preparations: Preparations,
        skills: Catalog,
        bodies: FileBodies,
        blobs: BlobStore | None = None,
        recorder: Recorder | None = None,
        membership: Membership,
    ) -> None:
        self.grants = grants
        self._recorder = recorder  # tells waiting sessions how set-up goes
        self._skills = skills
        self.bodies = bodies  # uploaded files' bodies, read when copied into a workspace
        self.blobs = blobs
        self._sealer = sealer
        self._remote_url = remote_url
        self._db = db
        self._registry = registry
        self._ids = ids
        self._clock = clock
        self._client = WorkspaceClient(preparations)
        self._writes = FileWrites(db, self._client, clock, DEFAULT_HARNESS, membership)
        self._initializing: dict[str, asyncio.Task[None]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    # Validation of a public environment body (session or environment create).
    async def hosted_config(
        self, project_id: str, body: dict[str, Any], param: str
    ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        """Return (public config, confidential inputs, initial files) or raise 400."""
        check_supported(body, param)
        files = await self._initial_files(project_id, body.get("files") or [], param)
        skills = await self._skills.resolve(project_id, body.get("skills") or [], f"{param}.skills")
        packages = body.get("packages") or {}
        config = {
            "capability_directories": list(body.get("capability_directories") or []),
            "skills": [skill.public for skill in skills],
            "network": {"access": "enabled", "allowed_domains": []},
            "packages": {
                "npm": list(packages.get("npm") or []),
                "python": list(packages.get("python") or []),
                "system": [],
            },
            "container_size": body.get("container_size"),
            "desktop": body.get("desktop"),
        }
        secrets = {
            "env": dict(body.get("env") or {}),
            "setup_commands": list(body.get("setup_commands") or []),
            "skills": [skill.secret() for skill in skills],
        }
        runs_commands = bool(secrets["setup_commands"]) or any(
            packages.get(kind) for kind in ("npm", "python")
        )
        if runs_commands and not self.grants.commands_allowed(project_id):
            raise InvalidRequest(
                "Commands cannot be confined on this host and the server's owner has not"
                " trusted this project to run them (corebox projects trust).",
                f"{param}.setup_commands",
                code="unsupported_or_invalid_configuration",
            )
        return config, secrets, files

    async def _initial_files(
        self, project_id: str, entries: list[dict[str, Any]], param: str
    ) -> list[dict[str, Any]]:
        """The environment's initial files: inline data, or an upload of the project."""
        files: list[dict[str, Any]] = []
        for index, entry in enumerate(entries):
            where = f"{param}.files[{index}]"
            path = check_path(entry.get("path"), f"{where}.path")
            if entry.get("type") == "inline":
                data = decode_inline(entry.get("data"), f"{where}.data")
                files.append({"type": "inline", "path": path, "data": data, "file_id": None})
            elif entry.get("type") == "file_id":
                wanted = str(entry.get("file_id"))
                body = await self.bodies.read(project_id, wanted)
                if body is None:
                    raise NotFound(param=f"{where}.file_id")
                files.append({"type": "file_id", "path": path, "data": body, "file_id": wanted})
            else:
                raise InvalidRequest(
                    "files entries are of type inline or file_id.", f"{where}.type"
                )
        return files

    async def insert_hosted(
        self,
        tx: Tx,
        project_id: str,
        config: dict[str, Any],
        secrets: dict[str, Any],
        files: list[dict[str, Any]],
        key: str | None = None,
        request_hash: str | None = None,
        owner: str = "session",
    ) -> str:
        environment_id = self._ids.new("env")
        now = self._clock.now()
        await env_rows.insert(
            tx,
            {
                "id": environment_id,
                "project_id": project_id,
                "wire_id": wire_uuid(environment_id),
                "type": "openai_hosted",
                "status": "pending",
                "config": config,
                "secrets": self._seal(environment_id, {**secrets, "files": _encoded(files)}),
                "created_at": now,
                "idempotency_key": key,
                "request_hash": request_hash,
                "owner": owner,
            },
        )
        for entry in files:
            await env_rows.reserve_file(
                tx,
                {
                    "id": self._ids.new("envfile"),
                    "environment_id": environment_id,
                    "path": entry["path"],
                    "type": entry["type"],
                    "file_id": entry["file_id"],
                    "size_bytes": len(entry["data"]),
                    "sha256": hashlib.sha256(entry["data"]).hexdigest(),
                    "created_at": now,
                },
            )
        return environment_id

    def _seal(self, environment_id: str, secrets: dict[str, Any]) -> dict[str, Any]:
        """Confidential inputs (env, setup commands, initial file bodies) are sealed at
        rest; without a sealer they are kept as given."""
        if self._sealer is None:
            return secrets
        sealed = self._sealer.seal_json(secrets, f"environments:{environment_id}")
        return {"sealed": base64.b64encode(sealed).decode()}

    def _open(self, environment_id: str, stored: dict[str, Any] | None) -> dict[str, Any]:
        if not stored or "sealed" not in stored or self._sealer is None:
            return stored or {}
        opened: dict[str, Any] = self._sealer.open_json(
            base64.b64decode(stored["sealed"]), f"environments:{environment_id}"
        )
        return opened

    async def insert_self_hosted(
        self, tx: Tx, project_id: str, body: dict[str, Any], param: str
    ) -> str:
        directory = body.get("workspace_directory")
        if not isinstance(directory, str) or not directory.startswith("/"):
            raise InvalidRequest(
                "workspace_directory must be an absolute path.", f"{param}.workspace_directory"
            )
        self.grants.check_directory(project_id, directory, f"{param}.workspace_directory")
        environment_id = self._ids.new("env")
        config = {
            "capability_directories": list(body.get("capability_directories") or []),
            "remote_url": self._remote_url,
        }
        await env_rows.insert(
            tx,
            {
                "id": environment_id,
                "project_id": project_id,
                "wire_id": wire_uuid(environment_id),
                "type": "self_hosted",
                "status": "pending",
                "config": config,
                "workspace_directory": directory,
                "created_at": self._clock.now(),
                "owner": "session",
            },
        )
        return environment_id

    def connection(self, harness: str = DEFAULT_HARNESS) -> Connection:
        connection = self._registry.select(harness, WORKSPACE_CAPABILITIES)
        if connection is None:
            raise Unavailable(
                "No Runtime that can serve workspaces is connected.",
                code="runtime_node_unavailable",
            )
        return connection

    # Initialization.
    async def ensure_initialized(self, environment_id: str, connection: Connection) -> None:
        """Initialize once (files, configuration, packages, setup); raise on failure.
        Concurrent callers wait for the one initialization. A failed or interrupted
        initialization is never replayed."""
        lock = self._locks.setdefault(environment_id, asyncio.Lock())
        async with lock:
            await self._initialize(environment_id, connection)

    async def _initialize(self, environment_id: str, connection: Connection) -> None:
        environment = await self._db.read(lambda r: env_rows.get_any(r, environment_id))
        if environment is None:
            raise WorkspaceUnavailable("environment_missing")
        if environment["initialization"] == "complete":
            return
        if environment["initialization"] in ("failed", "running"):
            raise WorkspaceUnavailable(environment.get("failure") or "initialization_failed")
        await self._set_initialization(environment_id, "running", "pending")
        secrets = self._open(environment_id, environment.get("secrets"))
        files = [
            (entry["path"], base64.b64decode(entry["data"])) for entry in secrets.get("files") or []
        ]
        config = environment["config"]
        try:
            skills = await self._installed_skills(secrets.get("skills") or [])
            async with self._client.read_only(
                connection, DEFAULT_HARNESS, wire_uuid(environment_id), environment
            ):
                await self._client.initialize(
                    connection,
                    environment,
                    wire_uuid(environment_id),
                    files,
                    skills,
                    secrets.get("env") or {},
                    config.get("packages") or {},
                    secrets.get("setup_commands") or [],
                    partial(self._record_setup, environment_id),
                )
        except BindRefused as exc:
            # Nothing reached the workspace. A self-hosted directory is the caller's to
            # make usable, so its environment waits for the next turn instead of failing.
            if environment["type"] == "self_hosted":
                await self._set_initialization(environment_id, "pending", "pending")
            else:
                await self._fail_initialization(environment_id, exc.code)
            raise
        except WorkspaceUnavailable as exc:
            await self._fail_initialization(environment_id, exc.code)
            raise
        except SendFailed as exc:
            await self._fail_initialization(environment_id, str(exc))
            raise WorkspaceUnavailable(str(exc)) from exc
        await self._initialized(environment_id, secrets)

    async def _initialized(self, environment_id: str, secrets: dict[str, Any]) -> None:
        """Record a completed initialization and drop the bodies it wrote."""
        await self._record_setup(environment_id, SetupProgress(DONE))
        await self._set_initialization(environment_id, "complete", "ready")

        async def written(tx: Tx) -> None:
            await tx.execute(
                "UPDATE environment_files SET state = 'written'"
                " WHERE environment_id = ? AND state = 'reserved'",
                (environment_id,),
            )
            # Initial file and skill bodies are written now; keep only what later steps
            # may need.
            remaining = {k: v for k, v in secrets.items() if k not in ("files", "skills")}
            await tx.execute(
                "UPDATE environments SET secrets = ? WHERE id = ?",
                (dumps(self._seal(environment_id, remaining)), environment_id),
            )

        await self._db.write(written)

    async def _installed_skills(self, kept: list[dict[str, str]]) -> list[InstalledSkill]:
        """The bundles of the environment's skills; a referenced version deleted since
        the environment was made fails the initialization (`skill_missing`)."""
        installed = []
        for entry in kept:
            archive = await self._skills.bundle(entry)
            if archive is None:
                raise WorkspaceUnavailable("skill_missing")
            installed.append(InstalledSkill(entry["name"], entry["description"], archive))
        return installed

    async def recover_interrupted(self) -> int:
        """At start, before any turn runs: an initialization that was running when the
        server stopped ends `failed`; its effects are unknown and it is never replayed.
        Turns queued behind it then fail with that reason."""

        async def job(tx: Tx) -> int:
            return await env_rows.fail_running_initializations(tx, INTERRUPTED)

        count = await self._db.write(job)
        if count:
            log.warning("%d interrupted environment initialization(s) marked failed", count)
        return count

    async def _record_setup(self, environment_id: str, progress: SetupProgress) -> None:
        """Durably record the step set-up is at, before that step is sent."""
        setup = progress.record(self._clock.now())

        async def job(tx: Tx) -> None:
            await env_rows.set_setup(tx, environment_id, setup)
            await self._tell_sessions(tx, environment_id, setup)

        await self._db.write(job)
        log.info(
            "environment %s set-up: %s %d/%d %s",
            environment_id,
            progress.phase,
            progress.done,
            progress.total,
            progress.package,
        )

    async def _tell_sessions(self, tx: Tx, environment_id: str, setup: dict[str, Any]) -> None:
        """An `agent.session.environment.*` event on the stream of every session with a
        turn waiting on the environment: `pending` at each step, then `ready` or `failed`."""
        if self._recorder is None:
            return
        row = await env_rows.get_any(tx, environment_id)
        if row is None:
            return
        event = environment_event(row, setup)
        for session_id, turn_id in await env_rows.waiting_sessions(tx, environment_id):
            body = {"session_id": session_id, "turn_id": turn_id, **event[1]}
            await self._recorder.emit(tx, session_id, event[0], body)

    async def _fail_initialization(self, environment_id: str, code: str) -> None:
        await self._set_initialization(
            environment_id, "failed", "failed", f"initialization failed: {code}"
        )

    async def _set_initialization(
        self, environment_id: str, initialization: str, status: str, failure: str | None = None
    ) -> None:
        async def job(tx: Tx) -> None:
            await env_rows.set_initialization(tx, environment_id, initialization, status, failure)
            if status == "failed":  # the step it failed at stays named
                row = await env_rows.get_any(tx, environment_id)
                last = (row or {}).get("setup") or {}
                setup = {**last, "phase": FAILED, "failure": failure}
                await env_rows.set_setup(tx, environment_id, setup)
                await self._tell_sessions(tx, environment_id, setup)

        await self._db.write(job)

    async def create_standalone(
        self, project_id: str, spec: dict[str, Any], key: str | None, request_hash: str
    ) -> str:
        """Create a hosted environment outside any session and start initializing it;
        replay-safe by idempotency `key` (the same request gives the same environment).
        The project owns it: retention never purges it with the sessions that use it."""
        config, secrets, files = await self.hosted_config(project_id, spec, "environment")

        async def job(tx: Tx) -> tuple[str, bool]:
            if key is not None:
                earlier = await env_rows.by_idempotency_key(tx, project_id, key)
                if earlier is not None:
                    if earlier["request_hash"] != request_hash:
                        raise IdempotencyConflict(
                            "This idempotency key was used with a different request."
                        )
                    return str(earlier["id"]), False
            environment_id = await self.insert_hosted(
                tx, project_id, config, secrets, files, key, request_hash, owner="project"
            )
            return environment_id, True

        environment_id, created = await self._db.write(job)
        if created:
            self.initialize_later(environment_id)
        return environment_id

    async def delete_artifact(self, artifact_id: str) -> None:
        async def job(tx: Tx) -> None:
            await env_rows.delete_artifact(tx, artifact_id, self._clock.now())

        await self._db.write(job)

    def initialize_later(self, environment_id: str) -> None:
        """Start initializing a standalone Environment in the background."""

        async def run() -> None:
            try:
                await self.ensure_initialized(environment_id, self.connection())
            except (WorkspaceUnavailable, Refused) as exc:
                log.warning("environment %s initialization failed: %s", environment_id, exc)

        task = asyncio.create_task(run(), name=f"init-{environment_id}")
        self._initializing[environment_id] = task
        task.add_done_callback(lambda _t: self._initializing.pop(environment_id, None))

    async def stop(self) -> None:
        """Cancel the background initializations still running and wait for them. Each
        stays `running` in the database and is failed as interrupted at the next start."""
        for task in list(self._initializing.values()):
            await cancel_and_wait(task)

    # Files.
    async def write_file(
        self,
        project_id: str,
        environment_id: str,
        path: str,
        data: bytes,
        type_: str,
        file_id: str | None,
    ) -> dict[str, Any]:
        environment = await self._db.read(lambda r: env_rows.get(r, project_id, environment_id))
        if environment is None:
            raise NotFound()
        connection = self.connection()
        try:
            await self.ensure_initialized(environment_id, connection)
        except WorkspaceUnavailable as exc:
            raise Conflict(
                "The environment failed to initialize.", code="environment_unavailable"
            ) from exc
        row_id = self._ids.new("envfile")
        row = {
            "id": row_id,
            "environment_id": environment_id,
            "path": path,
            "type": type_,
            "file_id": file_id,
            "size_bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "created_at": self._clock.now(),
            "prior": PENDING,
        }
        with self._writes.owning(row_id):
            await self._reserve_file(connection, environment, row)
            await self._transfer(connection, environment, environment_id, row_id, path, data)
            await self._db.write(partial(env_rows.mark_written, file_row_id=row_id, was="reserved"))
        return {
            "environment_id": environment_id,
            "object": "agent.environment.file",
            "path": path,
            "size_bytes": len(data),
        }

    async def _reserve_file(
        self, connection: Connection, environment: dict[str, Any], row: dict[str, Any]
    ) -> None:
        """Reserve the file's row; refused while an earlier write is unsettled (after
        settling what the workspace shows) or while another write to its path is."""
        try:
            await self._writes.reserve(connection, environment, row)
        except Refused:
            raise
        except Exception as exc:
            raise Conflict("Another write to that path is in progress.", param="path") from exc

    async def _transfer(
        self,
        connection: Connection,
        environment: dict[str, Any],
        environment_id: str,
        row_id: str,
        path: str,
        data: bytes,
    ) -> None:
        """Write the reserved file into the workspace, once what its path holds is
        recorded (a regular file there is replaced); an unknown outcome leaves the row
        `unknown`, a refusal or a failure before the transfer began drops it."""
        begun = False
        try:
            async with self._client.read_only(
                connection, DEFAULT_HARNESS, wire_uuid(environment_id), environment
            ) as handle:
                if not await self._writes.record_prior(
                    connection, handle, environment, row_id, path
                ):
                    raise Unavailable(_NOT_BEGUN, code="file_transfer_unavailable")
                begun = True
                await self._client.write(
                    connection,
                    wire_uuid(row_id),
                    environment,
                    wire_uuid(environment_id),
                    path[len(WORKSPACE) + 1 :],
                    data,
                )
        except WorkspaceUnavailable as exc:
            if exc.unknown and begun:
                await self._set_file(row_id, "unknown")
                raise OutcomeUnknown(
                    f"The file write's outcome is unknown ({exc.code}); it was not recorded "
                    "as written and will not be retried. Further writes to this environment "
                    "are refused until it is settled; each checks the workspace for it.",
                    code="file_transfer_unavailable",
                ) from exc
            # Refused, or never begun, so nothing was written: no row is left behind.
            await self._db.write(partial(env_rows.drop_reservation, file_row_id=row_id))
            if exc.unknown:
                raise Unavailable(_NOT_BEGUN, code="file_transfer_unavailable") from exc
            raise InvalidRequest(_REFUSED_WRITE.get(exc.code, _UNSAFE_WRITE), "path") from exc

    async def _set_file(self, row_id: str, state: str) -> None:
        async def job(tx: Tx) -> None:
            await env_rows.set_file_state(tx, row_id, state)

        await self._db.write(job)

    async def list_files(
        self, project_id: str, environment_id: str, path: str
    ) -> list[dict[str, Any]]:
        """Every regular file in the tree under `path` (a workspace directory), walked
        breadth first without following symlinks; the reserved folders and directories
        that cannot be read are left out. At most `MAX_LISTED_DIRECTORIES` directories
        are read. A `path` that is a file or missing lists nothing; one that is a
        symlink, lies behind one or cannot be read is refused (400 naming `path`)."""
        environment = await self._db.read(lambda r: env_rows.get(r, project_id, environment_id))
        if environment is None:
            raise NotFound()
        connection = self.connection()
        try:
            await self.ensure_initialized(environment_id, connection)
            async with self._client.read_only(
                connection, DEFAULT_HARNESS, wire_uuid(environment_id), environment
            ) as handle:
                return await self._walk(connection, handle, environment, path)
        except WorkspaceUnavailable as exc:
            if exc.code == "not_directory":
                return []
            raise Unavailable(
                "The workspace could not be read.", code="file_storage_unavailable"
            ) from exc

    async def _walk(
        self, connection: Connection, handle: str, environment: dict[str, Any], path: str
    ) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        top = path.rstrip("/")
        pending = [top]
        visited = 0
        while pending and visited < MAX_LISTED_DIRECTORIES:
            directory = pending.pop(0)
            visited += 1
            relative = directory[len(WORKSPACE) + 1 :]
            try:
                listing = await self._client.list_directory(
                    connection, handle, environment, relative
                )
            except WorkspaceUnavailable as exc:
                # The Runtime refuses a symlink (or a path through one) as permission_denied.
                if exc.code == "permission_denied" and directory == top:
                    raise InvalidRequest(UNLISTABLE, "path") from exc
                if exc.code in ("not_directory", "permission_denied") and directory != top:
                    continue  # replaced by a file or a link while the walk ran, or unreadable
                raise
            for entry in listing.entries:
                full = f"{directory}/{entry.name}"
                if entry.kind == "directory" and not reserved(full):
                    pending.append(full)
                elif entry.kind == "file":
                    found.append(
                        {
                            "environment_id": environment["id"],
                            "object": "agent.environment.file",
                            "path": full,
                            "size_bytes": entry.size_bytes,
                        }
                    )
        return found

    # Artifacts.
    async def capture(
        self,
        session_id: str,
        turn_id: str,
        connection: Connection,
        fence: Callable[[Tx], Awaitable[None]] | None = None,
    ) -> int:
        """Store regular files under outputs/ as artifacts: those new or changed since
        the environment's latest artifact at their path, whichever session made it.
        `fence` runs first in every write and raises when the turn's claim was
        superseded: a stale worker stores nothing."""
        session = await self._db.read(lambda r: sessions.get_any(r, session_id))
        if session is None or not session.get("environment_id"):
            return 0
        environment = await self._db.read(lambda r: env_rows.get_any(r, session["environment_id"]))
        if environment is None:
            return 0
        async with self._client.read_only(
            connection, session["harness"], wire_uuid(session_id), environment
        ) as handle:
            archive = await self._client.export_outputs(connection, handle, environment)
        entries = _regular_files(archive)
        captured = 0
        for name, content in entries:
            artifact = {
                "session_id": session_id,
                "turn_id": turn_id,
                "environment_id": environment["id"],
                "path": f"{WORKSPACE}/{name}",
            }
            captured += await self._store_artifact(artifact, content, fence)
        return captured

    async def _store_artifact(
        self,
        artifact: dict[str, Any],
        content: bytes,
        fence: Callable[[Tx], Awaitable[None]] | None,
    ) -> bool:
        """Store one output as an artifact unless the environment's latest artifact at its
        path holds the same bytes (a file an earlier session of a reused environment left
        unchanged is not this session's output). The body goes to the blob store first
        when it is large; the row references it in the same transaction."""
        digest = hashlib.sha256(content).hexdigest()
        if self.blobs is not None and self.blobs.holds(len(content)):
            await asyncio.to_thread(self.blobs.put, digest, content)

        async def store(tx: Tx) -> bool:
            if fence is not None:
                await fence(tx)
            latest = await env_rows.latest_artifact_digest(
                tx, artifact["environment_id"], artifact["path"]
            )
            if latest == digest:
                return False
            row = {
                "id": self._ids.new("artifact"),
                **artifact,
                "size_bytes": len(content),
                "sha256": digest,
                "content": content,
                "created_at": self._clock.now(),
            }
            await env_rows.insert_artifact(tx, row, self.blobs)
            return True

        return await self._db.write(store)


def artifact_body(row: dict[str, Any], blobs: BlobStore | None) -> bytes:
    """An artifact's bytes, from the blob store when its row references a blob."""
    if row.get("blob"):
        if blobs is None:
            raise NotFound("The artifact's content is not available here.")
        return blobs.read(str(row["blob"]))
    return bytes(row["content"])


def _encoded(files: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [{"path": f["path"], "data": _b64(f["data"])} for f in files]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()

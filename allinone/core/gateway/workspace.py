"""Core's side of workspace operations: read-only preparations, reads, writes, exports
and Environment initialization, each over the protocol, never by touching a directory.

Every operation runs under a read-only preparation (`execution_prepare` with
`workspace_read_only`, through the shared preparation client) that binds the
Environment on the connection, and releases it afterwards. Writes and initialization
transfers are registered with that client while open, so a turn's start refused
meanwhile waits for them to settle. A reply that does not prove the outcome leaves it
unknown; nothing is retried automatically.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from allinone.core.gateway.connection import Connection
from allinone.core.gateway.preparations import (
    PreparationRefused,
    Preparations,
    PreparationUnconfirmed,
    PreparationUnsent,
)
from allinone.core.gateway.setup_progress import (
    CREATING,
    INSTALLING,
    RUNNING_SETUP,
    Report,
    SetupProgress,
    ignore,
)
from allinone.core.gateway.workspace_rules import (
    WORKSPACE_CAPABILITIES,
    BindRefused,
    WorkspaceUnavailable,
    initialization_steps,
    read_only_configuration,
    settle_transfer,
    wire_uuid,
)
from runtime.proto import limits
from runtime.proto.codec import Frame
from runtime.proto.exports import ExportOutcome, ExportStep, WorkspaceExport
from runtime.proto.initialization import (
    InitializationAction,
    RuntimeInitialFile,
    RuntimeInitialization,
    RuntimePrepare,
    SkillMetadata,
)
from runtime.proto.transfers import TransferOutcome, TransferStep
from runtime.proto.workspace import DirectoryListing, ReadOutcome, WorkspaceRead
from runtime.proto.writes import WorkspaceWrite

OPERATION_TIMEOUT_SECONDS = 17.0
TRANSFER_TIMEOUT_SECONDS = 195.0
SETUP_TIMEOUT_SECONDS = 900.0


@dataclass(frozen=True)
class InstalledSkill:
    """A skill an initialization installs: its bundle (a zip) goes to the Runtime as a
    `runtime_prepare` `skill` transfer, which unpacks it at `/workspace/.skills/<name>/`."""

    name: str
    description: str
    archive: bytes


class WorkspaceClient:
    def __init__(self, preparations: Preparations) -> None:
        self._preparations = preparations
        self._new_id = preparations.new_id

    @contextlib.asynccontextmanager
    async def read_only(
        self, connection: Connection, harness: str, session_id: str, environment: dict[str, Any]
    ) -> AsyncIterator[str]:
        """A read-only preparation bound to `environment`; yields its handle."""
        config = read_only_configuration(harness, environment)
        try:
            prepared = await self._preparations.prepare(
                connection, session_id, config, OPERATION_TIMEOUT_SECONDS
            )
        except PreparationRefused as exc:
            raise BindRefused(exc.code or "preparation_failed") from exc
        except PreparationUnconfirmed as exc:
            if exc.closed:
                raise WorkspaceUnavailable("closed") from exc
            raise WorkspaceUnavailable("preparation_unconfirmed", unknown=True) from exc
        except PreparationUnsent as exc:
            raise WorkspaceUnavailable("preparation_unconfirmed", unknown=True) from exc
        try:
            yield prepared.handle
        finally:
            await self._preparations.release(prepared)

    @contextlib.contextmanager
    def _operation(
        self, connection: Connection, operation_id: str, unconfirmed: str
    ) -> Iterator[asyncio.Queue[Frame]]:
        """Register for an operation's replies; anything but a WorkspaceUnavailable the
        body raises (a lost send, a closed connection, a reply that proves nothing)
        leaves the outcome unknown under `unconfirmed`."""
        queue = connection.expect_results(operation_id)
        try:
            yield queue
        except WorkspaceUnavailable:
            raise
        except Exception as exc:
            raise WorkspaceUnavailable(unconfirmed, unknown=True) from exc
        finally:
            connection.forget_results(operation_id)

    async def _exchange(
        self,
        connection: Connection,
        operation_id: str,
        type_: str,
        payload: msgspec.Struct,
        queue: asyncio.Queue[Frame],
        timeout: float = OPERATION_TIMEOUT_SECONDS,
    ) -> Any:
        await connection.send(type_, operation_id, payload)
        getter = asyncio.ensure_future(queue.get())
        closed = asyncio.ensure_future(connection.closed.wait())
        try:
            done, _ = await asyncio.wait(
                {getter, closed}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            closed.cancel()
            if not getter.done():
                getter.cancel()
        if getter not in done:
            raise WorkspaceUnavailable("reply_missing", unknown=True)
        return getter.result().payload

    async def list_directory(
        self, connection: Connection, handle: str, environment: dict[str, Any], path: str
    ) -> DirectoryListing:
        operation_id = self._new_id("op")
        request = WorkspaceRead(
            environment_id=environment["wire_id"],
            path=path,
            handle=handle,
            operation="directory",
            max_entries=limits.MAX_DIRECTORY_ENTRIES,
        )
        with self._operation(connection, operation_id, "read_unconfirmed") as queue:
            result = await self._exchange(
                connection, operation_id, "workspace_read", request, queue
            )
            result.check(request)
        if result.outcome != ReadOutcome.COMPLETED or result.directory is None:
            raise WorkspaceUnavailable(result.error_code or "read_failed")
        listing: DirectoryListing = result.directory
        return listing

    async def read_file(
        self,
        connection: Connection,
        handle: str,
        environment: dict[str, Any],
        path: str,
        max_bytes: int,
    ) -> tuple[bytes, bool]:
        """Up to `max_bytes` (1..1 MiB) of the regular file at `path` (workspace-relative)
        and whether more follows. A refusal raises WorkspaceUnavailable with the Runtime's
        code (`not_found` when no regular file is there, `permission_denied` for a
        symlink); a reply that proves nothing raises it with `unknown` set."""
        operation_id = self._new_id("op")
        request = WorkspaceRead(
            environment_id=environment["wire_id"], path=path, handle=handle, max_bytes=max_bytes
        )
        with self._operation(connection, operation_id, "read_unconfirmed") as queue:
            result = await self._exchange(
                connection, operation_id, "workspace_read", request, queue
            )
            result.check(request)
        if result.outcome == ReadOutcome.UNKNOWN:
            raise WorkspaceUnavailable(result.error_code, unknown=True)
        if result.outcome != ReadOutcome.COMPLETED:
            raise WorkspaceUnavailable(result.error_code or "read_failed")
        return bytes(result.data), bool(result.truncated)

    async def write(
        self,
        connection: Connection,
        mutation_id: str,
        environment: dict[str, Any],
        session_wire_id: str,
        path: str,
        data: bytes,
    ) -> None:
        """Transfer `data` to `path` (workspace-relative); raise unless `completed`."""
        digest = hashlib.sha256(data).hexdigest()

        async def step(payload: WorkspaceWrite, expected: TransferOutcome, offset: int) -> None:
            result = await self._exchange(
                connection, mutation_id, "workspace_write", payload, queue, TRANSFER_TIMEOUT_SECONDS
            )
            # A receipt that is not the expected one nor a finite terminal proves nothing:
            # check raises and the write's outcome stays unknown (`write_unconfirmed`).
            result.check(expected, offset, len(data))
            settle_transfer(result.outcome, result.reason or result.error_code)

        with (
            self._preparations.writes.holding(environment["wire_id"]),
            self._operation(connection, mutation_id, "write_unconfirmed") as queue,
        ):
            await step(
                WorkspaceWrite(
                    step=TransferStep.BEGIN,
                    environment_id=environment["wire_id"],
                    session_id=session_wire_id,
                    path=path,
                    size_bytes=len(data),
                    sha256=digest,
                ),
                TransferOutcome.READY,
                0,
            )
            for offset in range(0, len(data), limits.MAX_CHUNK_BYTES):
                chunk = data[offset : offset + limits.MAX_CHUNK_BYTES]
                await step(
                    WorkspaceWrite(step=TransferStep.CHUNK, offset=offset, data=chunk),
                    TransferOutcome.RECEIVED,
                    offset + len(chunk),
                )
            await step(WorkspaceWrite(step=TransferStep.COMMIT), TransferOutcome.COMPLETED, 0)

    async def export_outputs(
        self, connection: Connection, handle: str, environment: dict[str, Any]
    ) -> bytes:
        operation_id = self._new_id("op")
        received = bytearray()
        with self._operation(connection, operation_id, "export_unconfirmed") as queue:
            result = await self._exchange(
                connection,
                operation_id,
                "workspace_export",
                WorkspaceExport(
                    step=ExportStep.BEGIN, handle=handle, environment_id=environment["wire_id"]
                ),
                queue,
            )
            while True:
                result.check(len(received))
                if result.outcome == ExportOutcome.COMPLETED:
                    return bytes(received)
                if result.outcome != ExportOutcome.CHUNK:
                    raise WorkspaceUnavailable(result.error_code or "export_failed")
                received.extend(result.data)
                result = await self._exchange(
                    connection,
                    operation_id,
                    "workspace_export",
                    WorkspaceExport(step=ExportStep.NEXT, offset=len(received)),
                    queue,
                )

    async def initialize(
        self,
        connection: Connection,
        environment: dict[str, Any],
        session_wire_id: str,
        files: list[tuple[str, bytes]],
        skills: list[InstalledSkill],
        env: dict[str, str],
        packages: dict[str, list[str]],
        setup: list[dict[str, Any]],
        report: Report = ignore,
    ) -> None:
        """Initial files, skills, then configuration, packages and setup commands, in
        order; `report` is told each step before it is sent (it is not told the end)."""
        await report(SetupProgress(CREATING))
        for path, data in files:
            await self._prepare_transfer(
                connection,
                environment,
                session_wire_id,
                action="file",
                file=RuntimeInitialFile(path=path),
                data=data,
            )
        for skill in skills:
            await self._prepare_transfer(
                connection,
                environment,
                session_wire_id,
                action="skill",
                skill=SkillMetadata(name=skill.name, description=skill.description),
                data=skill.archive,
            )
        steps = initialization_steps(env, packages, setup)
        last = SetupProgress(CREATING)
        for initialization, progress in zip(steps, progress_of(steps), strict=True):
            if progress != last:  # configuration is still part of creating
                await report(progress)
                last = progress
            await self._prepare_transfer(
                connection,
                environment,
                session_wire_id,
                action="initialize",
                initialization=initialization,
            )

    async def _prepare_transfer(
        self,
        connection: Connection,
        environment: dict[str, Any],
        session_wire_id: str,
        *,
        action: Literal["file", "skill", "initialize"],
        file: RuntimeInitialFile | None = None,
        skill: SkillMetadata | None = None,
        initialization: RuntimeInitialization | None = None,
        data: bytes = b"",
    ) -> None:
        transfer_id = str(uuid.uuid4())
        timeout = SETUP_TIMEOUT_SECONDS if initialization else TRANSFER_TIMEOUT_SECONDS

        async def step(payload: RuntimePrepare, expected: TransferOutcome, offset: int) -> Any:
            result = await self._exchange(
                connection, transfer_id, "runtime_prepare", payload, queue, timeout
            )
            result.check(expected, offset, len(data))  # else unknown, as for writes
            detail = f" (exit {result.exit_code})" if result.exit_code else ""
            settle_transfer(result.outcome, f"{result.error_code}{detail}")
            return result

        with (
            self._preparations.writes.holding(environment["wire_id"]),
            self._operation(connection, transfer_id, "runtime_preparation_unconfirmed") as queue,
        ):
            await step(
                RuntimePrepare(
                    step=TransferStep.BEGIN,
                    environment_id=environment["wire_id"],
                    session_id=session_wire_id,
                    action=action,
                    file=file,
                    skill=skill,
                    initialization=initialization,
                    size_bytes=len(data),
                    sha256=hashlib.sha256(data).hexdigest() if file or skill else "",
                ),
                TransferOutcome.READY,
                0,
            )
            for offset in range(0, len(data), limits.MAX_CHUNK_BYTES):
                chunk = data[offset : offset + limits.MAX_CHUNK_BYTES]
                await step(
                    RuntimePrepare(step=TransferStep.CHUNK, offset=offset, data=chunk),
                    TransferOutcome.RECEIVED,
                    offset + len(chunk),
                )
            await step(RuntimePrepare(step=TransferStep.COMMIT), TransferOutcome.COMPLETED, 0)


def progress_of(steps: list[RuntimeInitialization]) -> list[SetupProgress]:
    """How far set-up is as each of `steps` is about to be sent."""
    total = sum(
        len(s.packages or [])
        for s in steps
        if s.action in (InitializationAction.PYTHON, InitializationAction.NPM)
    )
    commands = [s for s in steps if s.action == InitializationAction.SETUP]
    found: list[SetupProgress] = []
    installed = ran = 0
    for step in steps:
        if step.action == InitializationAction.SETUP:
            found.append(SetupProgress(RUNNING_SETUP, ran, len(commands)))
            ran += 1
        elif step.action == InitializationAction.CONFIGURE:
            found.append(SetupProgress(CREATING))
        else:
            listed = step.packages or []
            package = ", ".join(listed)  # installed together, by one call
            found.append(SetupProgress(INSTALLING, installed, total, step.action, package))
            installed += len(listed)
    return found


__all__ = [
    "OPERATION_TIMEOUT_SECONDS",
    "SETUP_TIMEOUT_SECONDS",
    "TRANSFER_TIMEOUT_SECONDS",
    "WORKSPACE_CAPABILITIES",
    "BindRefused",
    "InstalledSkill",
    "WorkspaceClient",
    "WorkspaceUnavailable",
    "wire_uuid",
]

"""Core's side of workspace operations: read-only preparations, reads, writes, exports
and Environment initialization, each over the protocol, never by touching a directory.

Every operation runs under a read-only preparation (`execution_prepare` with
`workspace_read_only`) that binds the Environment on the connection, and releases it
afterwards. A reply that does not prove the outcome leaves it unknown; nothing is
retried automatically.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

import msgspec

from allinone.core.errors import CoreError
from allinone.core.gateway.connection import Connection, SendFailed
from allinone.core.gateway.subscriptions import PreparationSubscription
from runtime.proto import limits
from runtime.proto.codec import Frame
from runtime.proto.execution import (
    AgentOptions,
    ExecutionConfiguration,
    ExecutionControls,
    ExecutionPrepare,
    ExecutionRelease,
    LocalEnvironment,
    PreparationState,
    PreparationStatus,
)
from runtime.proto.exports import ExportOutcome, ExportStep, WorkspaceExport
from runtime.proto.initialization import (
    InitializationAction,
    RuntimeInitialFile,
    RuntimeInitialization,
    RuntimePrepare,
)
from runtime.proto.transfers import TransferOutcome, TransferStep
from runtime.proto.workspace import DirectoryListing, ReadOutcome, WorkspaceRead
from runtime.proto.writes import WorkspaceWrite

OPERATION_TIMEOUT_SECONDS = 17.0
TRANSFER_TIMEOUT_SECONDS = 195.0
SETUP_TIMEOUT_SECONDS = 900.0
WORKSPACE_CAPABILITIES = ["local_environment", "workspace_read_preparation"]
_NAMESPACE = uuid.UUID("6f1c2d8e-7a41-4b5e-9c3a-2f0d7e1b9a64")


class WorkspaceUnavailable(CoreError):
    """The operation did not happen, or its outcome is unknown (`unknown` is set)."""

    def __init__(self, code: str, unknown: bool = False) -> None:
        super().__init__(code)
        self.code = code
        self.unknown = unknown


def wire_uuid(identifier: str) -> str:
    """The canonical UUID a Core identifier travels as where the protocol needs one."""
    return str(uuid.uuid5(_NAMESPACE, identifier))


def binding(environment: dict[str, Any]) -> LocalEnvironment:
    return LocalEnvironment(
        id=environment["wire_id"],
        type=environment["type"],
        workspace_directory=environment.get("workspace_directory") or "",
    )


async def _final_status(sub: PreparationSubscription, timeout: float) -> Any:
    """Follow a preparation's statuses past `preparing` to the first that decides it
    (`ready`, or an ending); None when the connection closed. The whole wait is bounded
    by `timeout` (TimeoutError)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise TimeoutError("preparation")
        status = await sub.next(remaining)
        preparing = isinstance(status, PreparationStatus) and (
            status.state is PreparationState.PREPARING
        )
        if not preparing:
            return status


def _settle_transfer(outcome: TransferOutcome, code: str) -> None:
    """After a checked receipt: a terminal one ends the transfer. `rejected` and
    `failed` mean it did not happen; `unknown` means nobody knows."""
    if outcome == TransferOutcome.UNKNOWN:
        raise WorkspaceUnavailable(code or "unconfirmed", unknown=True)
    if outcome in (TransferOutcome.REJECTED, TransferOutcome.FAILED):
        raise WorkspaceUnavailable(code or "rejected")


class WorkspaceClient:
    def __init__(self, new_id: Any) -> None:
        self._new_id = new_id

    @contextlib.asynccontextmanager
    async def read_only(
        self, connection: Connection, harness: str, session_id: str, environment: dict[str, Any]
    ) -> AsyncIterator[str]:
        """A read-only preparation bound to `environment`; yields its handle."""
        prep_id = self._new_id("prep")
        sub = connection.subscribe_preparation(prep_id)
        config = ExecutionConfiguration(
            agent_kind=harness,
            agent_options=AgentOptions(model="workspace"),
            execution_controls=ExecutionControls(
                web_search="disabled",
                text_verbosity="medium",
                disable_programmatic_tool_calling=True,
            ),
            local_environment=binding(environment),
            workspace_read_only=True,
        )
        try:
            await connection.send(
                "execution_prepare",
                prep_id,
                ExecutionPrepare(session_id=session_id, configuration=config),
            )
            status = await _final_status(sub, OPERATION_TIMEOUT_SECONDS)
        except (SendFailed, TimeoutError) as exc:
            connection.unsubscribe_preparation(prep_id)
            raise WorkspaceUnavailable("preparation_unconfirmed", unknown=True) from exc
        if not isinstance(status, PreparationStatus) or status.state is not PreparationState.READY:
            connection.unsubscribe_preparation(prep_id)
            code = status.error_code if isinstance(status, PreparationStatus) else "closed"
            raise WorkspaceUnavailable(code or "preparation_failed")
        try:
            yield status.handle
        finally:
            with contextlib.suppress(SendFailed):
                await connection.send(
                    "execution_release", prep_id, ExecutionRelease(handle=status.handle)
                )
            connection.unsubscribe_preparation(prep_id)

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
            _settle_transfer(result.outcome, result.reason or result.error_code)

        with self._operation(connection, mutation_id, "write_unconfirmed") as queue:
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
        env: dict[str, str],
        packages: dict[str, list[str]],
        setup: list[dict[str, Any]],
    ) -> None:
        """Initial files, then configuration, packages and setup commands, in order."""
        for path, data in files:
            await self._prepare_transfer(
                connection,
                environment,
                session_wire_id,
                action="file",
                file=RuntimeInitialFile(path=path),
                data=data,
            )
        steps: list[RuntimeInitialization] = []
        if env:
            steps.append(RuntimeInitialization(action=InitializationAction.CONFIGURE, env=env))
        for kind in ("python", "npm"):
            if packages.get(kind):
                steps.append(
                    RuntimeInitialization(
                        action=InitializationAction(kind), packages=packages[kind]
                    )
                )
        for command in setup:
            steps.append(
                RuntimeInitialization(
                    action=InitializationAction.SETUP,
                    command=command["command"],
                    cwd=command.get("cwd") or "",
                )
            )
        for initialization in steps:
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
        action: Literal["file", "initialize"],
        file: RuntimeInitialFile | None = None,
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
            _settle_transfer(result.outcome, f"{result.error_code}{detail}")
            return result

        with self._operation(connection, transfer_id, "runtime_preparation_unconfirmed") as queue:
            await step(
                RuntimePrepare(
                    step=TransferStep.BEGIN,
                    environment_id=environment["wire_id"],
                    session_id=session_wire_id,
                    action=action,
                    file=file,
                    initialization=initialization,
                    size_bytes=len(data),
                    sha256=hashlib.sha256(data).hexdigest() if file else "",
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

"""Preparations: admission of `execution_prepare`, its start into a Run, and release.

Each handler is an async generator of the `preparation_status` payloads to publish for
its request, in order; it never sends. The dispatcher sends each status before the
handler goes on, so `preparing` is on the wire before native preparation begins and
`started` before the Run's first frame. A request the Runtime does not accept raises
`Refused`, which the dispatcher turns into the one `rejected` status.

This module also answers which workspace a handle or Run may touch (`owned_binding`),
since only the admission table knows whether a handle is still ready.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from functools import partial

from runtime.admission import AdmissionRecord, AdmissionTable, fingerprint
from runtime.errors import Refused
from runtime.executors import ExecutorPool, IdleKey
from runtime.harness.base import HarnessAdapter
from runtime.harness.registry import HarnessRegistry
from runtime.proto import limits
from runtime.proto.errors import PreparationErrorCode, ValidationError
from runtime.proto.execution import (
    ExecutionPrepare,
    ExecutionRelease,
    ExecutionStart,
    PreparationState,
    PreparationStatus,
)
from runtime.runs import Run, Send
from runtime.suspension import Suspensions
from runtime.workspaces import Binding, WorkspaceError, Workspaces

log = logging.getLogger(__name__)

Statuses = AsyncGenerator[PreparationStatus, None]


def _idle_key(record: AdmissionRecord) -> IdleKey:
    return (record.session_id, fingerprint(record.configuration))


class Preparations:
    def __init__(
        self,
        harnesses: HarnessRegistry,
        pool: ExecutorPool,
        workspaces: Workspaces,
        suspensions: Suspensions,
        writing: Callable[[str], bool],
        send: Send,
        now_ms: Callable[[], int],
        new_id: Callable[[], str],
    ) -> None:
        self._harnesses = harnesses
        self._pool = pool
        self._workspaces = workspaces
        self._suspensions = suspensions
        self._writing = writing  # whether a write to the Environment is under way
        self._send = send
        self._now_ms = now_ms
        self._new_id = new_id
        self._admissions = AdmissionTable()
        self.runs: dict[str, Run] = {}
        self.bindings: dict[str, Binding] = {}  # handle or run id -> bound workspace
        self.shutting_down = False
        self._seeding: dict[str, asyncio.Lock] = {}  # environment id -> its seeding

    # execution_prepare
    async def prepare(self, request_id: str, request: ExecutionPrepare) -> Statuses:
        existing = self._admissions.get(request_id)
        if existing is not None:
            if existing.prepare_fingerprint != fingerprint(request):
                raise Refused(PreparationErrorCode.REQUEST_CONFLICT)
            yield existing.status()
            return
        await self._seed(request)
        adapter, binding = self._check_prepare(request)
        if request.configuration.workspace_read_only:
            yield self._prepare_read_only(request_id, request, binding)
            return
        record = await self._admit(request_id, request)
        async with aclosing(self._prepare_executor(record, adapter)) as statuses:
            async for status in statuses:
                yield status

    async def _seed(self, request: ExecutionPrepare) -> None:
        """Create a forked managed workspace from its snapshot before binding it, off the
        event loop (a copy can take a while); raises Refused."""
        local = request.configuration.local_environment
        if local is None or local.seed is None or local.type != "openai_hosted":
            return
        lock = self._seeding.setdefault(local.id, asyncio.Lock())
        async with lock:
            try:
                await asyncio.to_thread(self._workspaces.seed, local.id, local.seed)
            except WorkspaceError as exc:
                raise Refused(exc.code) from exc

    def _check_prepare(self, request: ExecutionPrepare) -> tuple[HarnessAdapter, Binding | None]:
        """The preparation's adapter and Environment binding; raises Refused."""
        if self.shutting_down:
            raise Refused(PreparationErrorCode.RESOURCE_UNAVAILABLE)
        try:
            request.validate()
        except ValidationError as exc:
            raise Refused(exc.code) from exc
        cfg = request.configuration
        adapter = self._harnesses.get(cfg.agent_kind)
        if adapter is None or not adapter.available():
            raise Refused(PreparationErrorCode.UNSUPPORTED_PREPARATION)
        local = cfg.local_environment
        if local is None:
            return adapter, None
        if not adapter.declaration.local_environment:
            raise Refused(PreparationErrorCode.UNSUPPORTED_CONFIGURATION)
        if self._suspensions.is_quiesced(local.id):
            raise Refused(PreparationErrorCode.RESOURCE_UNAVAILABLE)
        try:
            binding = self._workspaces.bind(
                local.id, local.type, local.workspace_directory, local.seed
            )
        except WorkspaceError as exc:
            raise Refused(exc.code) from exc
        return adapter, binding

    def _record(
        self, request_id: str, request: ExecutionPrepare, read_only: bool = False
    ) -> AdmissionRecord:
        """Add a new admission, expiring after the admission expiry; raises Refused when
        the preparation capacity is full."""
        record = AdmissionRecord(
            request_id=request_id,
            handle=self._new_id(),
            session_id=request.session_id,
            configuration=request.configuration,
            prepare_fingerprint=fingerprint(request),
            read_only=read_only,
        )
        if not self._admissions.add(record, self._now_ms()):
            raise Refused(PreparationErrorCode.PREPARATION_CAPACITY)
        record.expires_at_ms = self._now_ms() + limits.ADMISSION_EXPIRY_SECONDS * 1000
        return record

    async def _admit(self, request_id: str, request: ExecutionPrepare) -> AdmissionRecord:
        """Reserve admission within the preparation and Executor capacities; raises
        Refused `preparation_capacity` when there is no room, for Executors too (every
        one busy, or closing): the one refusal that leaves the turn queued for Core to
        try again (seed 000), where any other code fails it."""
        if self._admissions.active_preparations() >= limits.MAX_ACTIVE_PREPARATIONS:
            raise Refused(PreparationErrorCode.PREPARATION_CAPACITY)
        key = (request.session_id, fingerprint(request.configuration))
        if not self._pool.reusable(key) and not await self._pool.make_room(
            self._admissions.active_preparations()
        ):
            raise Refused(PreparationErrorCode.PREPARATION_CAPACITY)
        return self._record(request_id, request)

    async def _prepare_executor(self, record: AdmissionRecord, adapter: HarnessAdapter) -> Statuses:
        """Reuse the Session's idle Executor (`ready` at once) or prepare a new one."""
        cfg = record.configuration
        idle = self._pool.take_idle(_idle_key(record))
        if idle is not None:
            record.executor_id, record.reused = idle, True
            yield record.advance(PreparationState.READY)
            return
        yield record.advance(PreparationState.PREPARING)
        executor_id = self._new_id()
        try:
            executor = await adapter.create_executor(executor_id, cfg)
        except Exception:
            log.exception("native preparation failed")
            yield record.advance(PreparationState.FAILED, PreparationErrorCode.PREPARATION_FAILED)
            return
        local = cfg.local_environment
        self._pool.add(executor_id, executor, adapter.declaration, local.id if local else "")
        if record.state is not PreparationState.PREPARING:
            # Released while preparing: the Executor is kept idle, not leaked.
            self._pool.went_idle(_idle_key(record), executor_id)
            return
        record.executor_id = executor_id
        yield record.advance(PreparationState.READY)

    def _prepare_read_only(
        self, request_id: str, request: ExecutionPrepare, binding: Binding | None
    ) -> PreparationStatus:
        """The read-only profile: a handle bound to an Environment, no Harness, no input."""
        if binding is None or not request.configuration.local_environment:
            raise Refused(PreparationErrorCode.UNSUPPORTED_READ_PREPARATION)
        record = self._record(request_id, request, read_only=True)
        self.bindings[record.handle] = binding
        return record.advance(PreparationState.READY)

    def session_of(self, request_id: str) -> str:
        """The session a preparation request was admitted for ("" when unknown)."""
        record = self._admissions.get(request_id)
        return record.session_id if record is not None else ""

    # execution_start
    async def start(self, request_id: str, request: ExecutionStart) -> Statuses:
        record = self._admissions.get(request_id)
        if record is not None and record.state in (
            PreparationState.STARTING,
            PreparationState.STARTED,
        ):
            if record.start_fingerprint != fingerprint(request):
                raise Refused(PreparationErrorCode.START_CONFLICT, record)
            yield record.status()
            return
        record = self._check_start(request_id, request, record)
        if record.expired(self._now_ms()):
            yield record.advance(PreparationState.EXPIRED)
            self._pool.return_idle(_idle_key(record), record.executor_id)
            return
        self._check_runnable(request, record)
        if self._pool.get(record.executor_id) is None:
            yield record.advance(PreparationState.FAILED, PreparationErrorCode.EXECUTOR_UNAVAILABLE)
            return
        async with aclosing(self._launch(request, record)) as statuses:
            async for status in statuses:
                yield status

    def _check_start(
        self, request_id: str, request: ExecutionStart, record: AdmissionRecord | None
    ) -> AdmissionRecord:
        """The ready admission this start names; raises Refused (naming the handle
        except when the start names another one)."""
        if self.shutting_down:
            raise Refused(PreparationErrorCode.RESOURCE_UNAVAILABLE, record)
        if record is None:
            raise Refused(PreparationErrorCode.UNKNOWN_PREPARATION)
        try:
            request.validate()
        except ValidationError as exc:
            log.warning("execution_start %s refused: %s", request_id, exc.code)
            raise Refused(exc.code, record) from exc
        if record.read_only:
            raise Refused(PreparationErrorCode.READ_ONLY_PREPARATION, record)
        if request.handle != record.handle:
            log.warning("execution_start %s names another handle", request_id)
            raise Refused(PreparationErrorCode.INVALID_START)
        if request.executor_id != record.executor_id:
            raise Refused(PreparationErrorCode.UNKNOWN_EXECUTOR, record)
        if record.state is not PreparationState.READY:
            raise Refused(PreparationErrorCode.PREPARATION_NOT_READY, record)
        return record

    def _check_runnable(self, request: ExecutionStart, record: AdmissionRecord) -> None:
        """Raises Refused when the Run cannot start now."""
        if request.run_id in self.runs:
            raise Refused(PreparationErrorCode.RUN_CONFLICT, record)
        local = record.configuration.local_environment
        if local is not None and self._writing(local.id):
            # Execution is excluded while a write is received or applied (seed 000); the
            # handle stays ready, so Core may start it once the write settled.
            raise Refused(PreparationErrorCode.RESOURCE_UNAVAILABLE, record)

    async def _launch(self, request: ExecutionStart, record: AdmissionRecord) -> Statuses:
        """Transfer the admission to the Run (`starting`, `started`) and start it."""
        executor = self._pool.get(record.executor_id)
        assert executor is not None
        record.run_id = request.run_id
        record.start_fingerprint = fingerprint(request)
        yield record.advance(PreparationState.STARTING)
        local = record.configuration.local_environment
        workspace = None if local is None else self._workspaces.get(local.id)
        run = Run(
            request.run_id,
            executor,
            self._pool.declaration(record.executor_id),
            self._send,
            workspace=workspace.root if workspace else None,
            sandbox=self._workspaces.sandbox,
            history=request.history,
            snapshot=None if workspace is None else self._snapshot_of(workspace, request.run_id),
            session_id=record.session_id,
        )
        if workspace is not None:
            self.bindings[request.run_id] = workspace
        self.runs[request.run_id] = run
        yield record.advance(PreparationState.STARTED)
        run.start(request.input, request.resume)
        assert run.task is not None
        run.task.add_done_callback(lambda _t: self._run_finished(record, run))

    def _snapshot_of(self, binding: Binding, run_id: str) -> Callable[[], Awaitable[str]] | None:
        """What snapshots the Run's managed workspace as it ends, or None."""
        workspaces = self._workspaces
        if workspaces.snapshots is None or binding.type != "openai_hosted":
            return None
        return partial(asyncio.to_thread, workspaces.snapshot, binding, run_id)

    def _run_finished(self, record: AdmissionRecord, run: Run) -> None:
        self.runs.pop(run.run_id, None)
        self.bindings.pop(run.run_id, None)
        self._pool.return_idle(_idle_key(record), record.executor_id)

    # execution_release
    async def release(self, request_id: str, request: ExecutionRelease) -> Statuses:
        record = self._admissions.get(request_id)
        if record is None or record.handle != request.handle:
            raise Refused(PreparationErrorCode.INVALID_RELEASE)
        if record.state not in (PreparationState.PREPARING, PreparationState.READY):
            raise Refused(PreparationErrorCode.INVALID_RELEASE, record)
        yield record.advance(PreparationState.RELEASED)
        self.bindings.pop(record.handle, None)
        if not record.read_only:
            self._pool.return_idle(_idle_key(record), record.executor_id)

    # Workspace ownership
    def owned_binding(self, handle: str, run_id: str) -> Binding | None:
        """The workspace a ready handle (or else an active Run) owns; None when neither
        owns one or its Environment is quiesced."""
        binding = self._binding(handle, run_id)
        if binding is None or self._suspensions.is_quiesced(binding.environment_id):
            return None
        return binding

    def _binding(self, handle: str, run_id: str) -> Binding | None:
        if handle:
            record = self._admissions.by_handle(handle)
            if record is None or record.state is not PreparationState.READY:
                return None
            if record.expired(self._now_ms()):
                return None
            return self.bindings.get(handle)
        return self.bindings.get(run_id) if run_id in self.runs else None

    def environment_busy(self, environment_id: str) -> bool:
        return any(b.environment_id == environment_id for b in self.bindings.values())

"""Workspace operations on one connection: reads, writes, exports and Environment
initialization (`runtime_prepare`). Handlers return the frames to send; the dispatcher
sends them. At most one transfer (write or runtime_prepare) is open per connection; a
malformed or incomplete transfer never reaches the filesystem, and an exact commit or
rejection receipt ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.confinement import ConfinementError, inherited
from runtime.proto import limits
from runtime.proto.errors import ValidationError
from runtime.proto.exports import ExportOutcome, ExportStep, WorkspaceExport, WorkspaceExportResult
from runtime.proto.initialization import RuntimePrepare, RuntimePrepareResult
from runtime.proto.transfer_lifecycle import TransferReceiver
from runtime.proto.transfers import TransferKind, TransferOutcome, TransferStep
from runtime.proto.workspace import ReadOutcome, WorkspaceRead, WorkspaceReadResult
from runtime.proto.writes import WorkspaceWrite, WorkspaceWriteResult
from runtime.skills import install_skill
from runtime.timers import Timers
from runtime.workspaces import (
    WORKSPACE_PREFIX,
    Binding,
    WorkspaceError,
    Workspaces,
    export_outputs,
    list_directory,
    read_bytes,
    resolve,
    write_file,
    write_new_file,
)

log = logging.getLogger(__name__)

# Runs blocking filesystem work off the event loop (a thread by default).
Offload = Callable[[Callable[[], Any]], Awaitable[Any]]

SETUP_TIMEOUT_SECONDS = 600.0


@dataclass
class _Transfer:
    kind: TransferKind
    receiver: TransferReceiver
    binding: Binding
    path: str = ""
    action: str = ""
    body: bytearray = field(default_factory=bytearray)
    request: RuntimePrepare | None = None
    steps: int = 0  # accepted steps so far: an expiry armed at an older count is stale


@dataclass
class _Export:
    data: bytes
    environment_id: str
    offset: int = 0


class WorkspaceOperations:
    """Per-connection workspace state. `binding_of_owner(handle_or_run)` tells which
    Environment a preparation handle or Run is bound to."""

    def __init__(
        self,
        workspaces: Workspaces,
        binding_of_owner: Callable[[str, str], Binding | None],
        quiesced: Callable[[str], bool] = lambda _environment: False,
        timers: Timers | None = None,
        offload: Offload = asyncio.to_thread,
    ) -> None:
        self._timers = timers or Timers()
        self._offload = offload
        self._reads = 0  # reads admitted and not yet ended natively
        self._quiesced = quiesced
        self._workspaces = workspaces
        self._owner = binding_of_owner
        self._transfers: dict[str, _Transfer] = {}
        self._exports: dict[str, _Export] = {}
        self._environment: dict[str, dict[str, str]] = {}
        self._applying: dict[str, str] = {}  # transfer id -> Environment, while applied

    def _bound(self, environment_id: str) -> Binding | None:
        """The Environment's binding, unless it is unknown or quiesced."""
        if self._quiesced(environment_id):
            return None
        return self._workspaces.get(environment_id)

    def busy(self, environment_id: str) -> bool:
        """Whether a transfer (received or being applied) or an export of the
        Environment is in flight."""
        return self.writing(environment_id) or any(
            e.environment_id == environment_id for e in self._exports.values()
        )

    def writing(self, environment_id: str) -> bool:
        """Whether a write or initialization transfer of the Environment is open or
        being applied: execution is excluded meanwhile (seed 000)."""
        return environment_id in self._applying.values() or any(
            t.binding.environment_id == environment_id for t in self._transfers.values()
        )

    # Transfer expiry: the shell arms a timer after each accepted step.
    def transfer_steps(self, transfer_id: str) -> int | None:
        """The open transfer's accepted step count, or None when it is not open."""
        transfer = self._transfers.get(transfer_id)
        return None if transfer is None else transfer.steps

    def expire(
        self, transfer_id: str, steps: int
    ) -> WorkspaceWriteResult | RuntimePrepareResult | None:
        """End a transfer whose next step never came (still at `steps` accepted steps):
        nothing is applied, the slot is free, and the returned result is its finite
        `rejected` reply. None when the transfer moved on or already ended."""
        transfer = self._transfers.get(transfer_id)
        if transfer is None or transfer.steps != steps:
            return None
        del self._transfers[transfer_id]
        transfer.receiver.reject()
        log.warning("transfer %s expired waiting for its next step", transfer_id)
        if transfer.kind is TransferKind.WORKSPACE_WRITE:
            return WorkspaceWriteResult(
                outcome=TransferOutcome.REJECTED, error_code="invalid_request"
            )
        return RuntimePrepareResult(outcome=TransferOutcome.REJECTED, error_code="invalid_request")

    # Reads: at most MAX_CONCURRENT_READS per connection, each bounded by the read timer.
    async def read(self, request: WorkspaceRead) -> WorkspaceReadResult:
        """Read once the request is admitted. A read still running when the timer ends is
        answered `unknown`/`read_unconfirmed` (never data) and keeps counting against the
        capacity until the native read itself ends."""
        try:
            request.validate()
        except ValidationError:
            return _read_rejected("invalid_request")
        binding = self._owner(request.handle, request.run_id)
        if binding is None or binding.environment_id != request.environment_id:
            return _read_rejected("resource_unavailable")
        if self._reads >= limits.MAX_CONCURRENT_READS:
            return _read_rejected("read_capacity")
        self._reads += 1
        work = asyncio.ensure_future(self._offload(lambda: _read_now(binding, request)))
        work.add_done_callback(self._read_ended)
        try:
            result: WorkspaceReadResult = await asyncio.wait_for(
                asyncio.shield(work), self._timers.workspace_read
            )
        except TimeoutError:
            log.warning("workspace read outlived its timer; its outcome is unknown")
            return WorkspaceReadResult(outcome=ReadOutcome.UNKNOWN, error_code="read_unconfirmed")
        except Exception:  # an unexpected failure is an unknown outcome, never silence
            return WorkspaceReadResult(outcome=ReadOutcome.UNKNOWN, error_code="read_unconfirmed")
        return result

    def _read_ended(self, work: asyncio.Future[Any]) -> None:
        self._reads -= 1
        if not work.cancelled() and work.exception() is not None:
            log.warning("workspace read failed: %s", type(work.exception()).__name__)

    # Writes.
    def write(self, mutation_id: str, request: WorkspaceWrite) -> WorkspaceWriteResult | None:
        """Handle one step; None means no reply (a malformed frame for a pending transfer)."""

        def result(
            outcome: TransferOutcome,
            offset: int = 0,
            size: int = 0,
            code: str = "",
            reason: str = "",
        ) -> WorkspaceWriteResult:
            return WorkspaceWriteResult(
                outcome=outcome, offset=offset, size_bytes=size, error_code=code, reason=reason
            )

        try:
            request.validate()
        except ValidationError:
            if mutation_id in self._transfers:
                self._transfers.pop(mutation_id).receiver.reject()
            return result(TransferOutcome.REJECTED, code="invalid_request")
        if request.step == TransferStep.BEGIN:
            if len(self._transfers) >= limits.TRANSFERS_PER_CONNECTION:
                return result(TransferOutcome.REJECTED, code="write_capacity")
            binding = self._bound(request.environment_id)
            if binding is None:
                return result(TransferOutcome.REJECTED, code="resource_unavailable")
            receiver = _begun(TransferKind.WORKSPACE_WRITE, request.size_bytes, request.sha256)
            if receiver is None:
                return result(TransferOutcome.REJECTED, code="invalid_request")
            self._transfers[mutation_id] = _Transfer(
                TransferKind.WORKSPACE_WRITE, receiver, binding, path=request.path
            )
            return result(TransferOutcome.READY)
        transfer = self._transfers.get(mutation_id)
        if transfer is None or transfer.kind is not TransferKind.WORKSPACE_WRITE:
            return None
        return self._step(mutation_id, transfer, request.step, request.offset, request.data, result)

    def _step(
        self,
        transfer_id: str,
        transfer: _Transfer,
        step: str,
        offset: int,
        data: bytes,
        result: Callable[..., WorkspaceWriteResult],
    ) -> WorkspaceWriteResult:
        receiver = transfer.receiver
        if step == TransferStep.CHUNK:
            try:
                receiver.chunk(offset, data)
            except ValidationError:
                self._transfers.pop(transfer_id, None)
                return result(TransferOutcome.REJECTED, code="invalid_request")
            transfer.body.extend(data)
            transfer.steps += 1
            return result(TransferOutcome.RECEIVED, offset=receiver.staged())
        self._transfers.pop(transfer_id, None)
        try:
            receiver.commit()
        except ValidationError:
            return result(TransferOutcome.REJECTED, code="invalid_request")
        try:
            write_file(transfer.binding, transfer.path, bytes(transfer.body))
        except WorkspaceError as exc:
            receiver.reject()
            return result(TransferOutcome.REJECTED, code="write_rejected", reason=exc.reason)
        except OSError:
            receiver.settle(TransferOutcome.UNKNOWN)
            return result(TransferOutcome.UNKNOWN, code="write_unconfirmed")
        receiver.settle(TransferOutcome.COMPLETED)
        return result(TransferOutcome.COMPLETED, size=receiver.size_bytes)

    # Exports: a pull-based stream of a tar of `outputs/`.
    def export(self, operation_id: str, request: WorkspaceExport) -> WorkspaceExportResult:
        try:
            request.validate()
        except ValidationError:
            self._exports.pop(operation_id, None)
            return WorkspaceExportResult(
                outcome=ExportOutcome.REJECTED, offset=0, error_code="invalid_request"
            )
        if request.step == ExportStep.BEGIN:
            binding = self._owner(request.handle, "")
            if binding is None or binding.environment_id != request.environment_id:
                return WorkspaceExportResult(
                    outcome=ExportOutcome.REJECTED, offset=0, error_code="resource_unavailable"
                )
            try:
                self._exports[operation_id] = _Export(
                    export_outputs(binding), binding.environment_id
                )
            except OSError:
                return WorkspaceExportResult(
                    outcome=ExportOutcome.FAILED, offset=0, error_code="export_failed"
                )
            return self._next_chunk(operation_id, 0)
        state = self._exports.get(operation_id)
        if request.step == ExportStep.CANCEL or state is None:
            self._exports.pop(operation_id, None)
            return WorkspaceExportResult(
                outcome=ExportOutcome.REJECTED, offset=0, error_code="invalid_request"
            )
        if request.offset != state.offset:
            self._exports.pop(operation_id, None)
            return WorkspaceExportResult(
                outcome=ExportOutcome.FAILED, offset=state.offset, error_code="invalid_request"
            )
        return self._next_chunk(operation_id, request.offset)

    def export_open(self, operation_id: str) -> bool:
        return operation_id in self._exports

    def expire_export(self, operation_id: str) -> None:
        """The export outlived its deadline: its state is dropped (the Environment is
        no longer busy with it) and a later pull is refused."""
        if self._exports.pop(operation_id, None) is not None:
            log.warning("export %s expired before it completed", operation_id)

    def _next_chunk(self, operation_id: str, offset: int) -> WorkspaceExportResult:
        state = self._exports[operation_id]
        chunk = state.data[offset : offset + limits.MAX_CHUNK_BYTES]
        if not chunk:
            del self._exports[operation_id]
            return WorkspaceExportResult(outcome=ExportOutcome.COMPLETED, offset=offset)
        state.offset = offset + len(chunk)
        return WorkspaceExportResult(outcome=ExportOutcome.CHUNK, offset=offset, data=chunk)

    # Environment initialization.
    async def prepare(
        self, transfer_id: str, request: RuntimePrepare
    ) -> RuntimePrepareResult | None:
        result = _prepare_result
        try:
            request.validate()
        except ValidationError:
            if transfer_id in self._transfers:
                self._transfers.pop(transfer_id).receiver.reject()
            return result(TransferOutcome.REJECTED, code="invalid_request")
        if request.step == TransferStep.BEGIN:
            return self._begin_prepare(transfer_id, request)
        transfer = self._transfers.get(transfer_id)
        if transfer is None or transfer.kind is not TransferKind.RUNTIME_PREPARE:
            return None
        if request.step == TransferStep.CHUNK:
            try:
                transfer.receiver.chunk(request.offset, request.data)
            except ValidationError:
                self._transfers.pop(transfer_id, None)
                return result(TransferOutcome.REJECTED, code="invalid_request")
            transfer.body.extend(request.data)
            transfer.steps += 1
            return result(TransferOutcome.RECEIVED, offset=transfer.receiver.staged())
        self._transfers.pop(transfer_id, None)
        try:
            transfer.receiver.commit()
        except ValidationError:
            return result(TransferOutcome.REJECTED, code="invalid_request")
        self._applying[transfer_id] = transfer.binding.environment_id
        try:
            return await self._apply(transfer, result)
        finally:
            del self._applying[transfer_id]

    def _begin_prepare(self, transfer_id: str, request: RuntimePrepare) -> RuntimePrepareResult:
        result = _prepare_result
        if len(self._transfers) >= limits.TRANSFERS_PER_CONNECTION:
            return result(TransferOutcome.REJECTED, code="runtime_preparation_capacity")
        binding = self._bound(request.environment_id)
        if binding is None:
            return result(TransferOutcome.REJECTED, code="resource_unavailable")
        if request.action == "plugin":
            return result(TransferOutcome.REJECTED, code="runtime_preparation_unsupported")
        receiver = _begun(TransferKind.RUNTIME_PREPARE, request.size_bytes, request.sha256)
        if receiver is None:
            return result(TransferOutcome.REJECTED, code="invalid_request")
        path = request.file.path if request.file else ""
        self._transfers[transfer_id] = _Transfer(
            TransferKind.RUNTIME_PREPARE,
            receiver,
            binding,
            path=path.removeprefix(WORKSPACE_PREFIX),
            action=request.action,
            request=request,
        )
        return result(TransferOutcome.READY)

    async def _apply(
        self, transfer: _Transfer, result: Callable[..., RuntimePrepareResult]
    ) -> RuntimePrepareResult:
        receiver = transfer.receiver
        binding = transfer.binding
        if transfer.action in ("file", "skill"):
            try:
                if transfer.action == "skill" and transfer.request and transfer.request.skill:
                    install_skill(binding, transfer.request.skill.name, bytes(transfer.body))
                else:
                    write_new_file(binding, transfer.path, bytes(transfer.body))
            except WorkspaceError:
                receiver.reject()
                return result(TransferOutcome.REJECTED, code="runtime_preparation_rejected")
            receiver.settle(TransferOutcome.COMPLETED)
            return result(TransferOutcome.COMPLETED, size=receiver.size_bytes)
        request = transfer.request
        init = request.initialization if request else None
        exit_code = 0
        if transfer.action == "initialize" and init is not None:
            env = self._environment.setdefault(binding.environment_id, {})
            if init.action == "configure":
                env.update(init.env or {})
            else:
                exit_code = await self._install_or_setup(
                    binding, init.action, init.packages, init.command, init.cwd, env
                )
        if exit_code:
            receiver.settle(TransferOutcome.FAILED)
            return result(
                TransferOutcome.FAILED,
                code="runtime_preparation_failed",
                exit_code=min(exit_code, 255),
            )
        receiver.settle(TransferOutcome.COMPLETED)
        return result(TransferOutcome.COMPLETED)

    def environment_of(self, environment_id: str) -> dict[str, str]:
        return dict(self._environment.get(environment_id, {}))

    async def _install_or_setup(
        self,
        binding: Binding,
        action: str,
        packages: list[str] | None,
        command: str,
        cwd: str,
        env: dict[str, str],
    ) -> int:
        """Run an install or a setup command inside the workspace; return its exit code."""
        process_env = {**inherited(os.environ), **env}
        if action == "python":
            argv = [
                _python(),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--target",
                str(binding.root / ".packages" / "python"),
                *(packages or []),
            ]
        elif action == "npm":
            argv = [
                "npm",
                "install",
                "--silent",
                "--prefix",
                str(binding.root / ".packages"),
                *(packages or []),
            ]
        else:
            argv = ["/bin/sh", "-c", command]
        try:
            directory = resolve(binding, cwd) if cwd else binding.root
        except WorkspaceError:
            return 126
        if not directory.is_dir():
            return 126
        try:
            with self._workspaces.sandbox.command(argv, binding.root, process_env) as (
                confined,
                confined_env,
            ):
                return await _wait(confined, directory, confined_env)
        except ConfinementError as exc:
            log.warning("setup command refused: %s", exc)
            return 126


async def _wait(argv: list[str], directory: Path, env: dict[str, str]) -> int:
    """Run a setup command to its end (its process group killed at the time limit or
    when cancelled); its exit code."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=directory,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return 127
    try:
        return await asyncio.wait_for(process.wait(), SETUP_TIMEOUT_SECONDS)
    except TimeoutError:
        _kill_group(process.pid)
        await process.wait()
        return 124
    except asyncio.CancelledError:
        # The preparation was stopped (the Runtime is stopping): the command and what it
        # started must not outlive it. SIGKILL to its process group ends them at once;
        # the cancellation then carries on.
        _kill_group(process.pid)
        await process.wait()
        raise


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _prepare_result(
    outcome: TransferOutcome, offset: int = 0, size: int = 0, code: str = "", exit_code: int = 0
) -> RuntimePrepareResult:
    return RuntimePrepareResult(
        outcome=outcome, offset=offset, size_bytes=size, error_code=code, exit_code=exit_code
    )


def _begun(kind: TransferKind, size_bytes: int, sha256: str) -> TransferReceiver | None:
    """A receiver for a transfer that has begun, or None when its declaration is invalid."""
    receiver = TransferReceiver(kind, size_bytes, sha256)
    try:
        receiver.begin()
    except ValidationError:
        return None
    return receiver


def _read_rejected(code: str) -> WorkspaceReadResult:
    return WorkspaceReadResult(outcome=ReadOutcome.REJECTED, error_code=code)


def _read_now(binding: Binding, request: WorkspaceRead) -> WorkspaceReadResult:
    """The blocking part of a read, run off the event loop."""
    try:
        if request.is_directory:
            listing = list_directory(binding, request.path, request.max_entries)
            return WorkspaceReadResult(
                outcome=ReadOutcome.COMPLETED, directory=listing, close_acknowledged=True
            )
        data, truncated = read_bytes(binding, request.path, request.max_bytes)
    except WorkspaceError as exc:
        return _read_rejected(exc.code)
    except OSError:
        return _read_rejected("permission_denied")
    return WorkspaceReadResult(
        outcome=ReadOutcome.COMPLETED, data=data, truncated=truncated, close_acknowledged=True
    )


def _python() -> str:
    """A Python for package installs: this one unless frozen, else the one on PATH."""
    return "python3" if getattr(sys, "frozen", False) else sys.executable

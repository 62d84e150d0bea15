"""Core's preparation client: `execution_prepare`, `execution_start` and
`execution_release` over one connection, shared by the orchestrator (a turn's
execution) and the workspace operations (read-only preparations).

Every wait is bounded by a deadline the caller passes. A reply that does not prove the
outcome raises `PreparationUnconfirmed`; a request that never entered the send queue
raises `PreparationUnsent`; a final refusal raises `PreparationRefused` with the
Runtime's error code. Nothing is retried here except one case the protocol names: a
start refused `resource_unavailable` while a workspace write this client knows of was
open on the same Environment is sent again once that write settled (the handle stays
ready meanwhile), within the same deadline.

Errors::

    PreparationError
     +-- PreparationUnsent       the request never reached the peer
     |    +-- PreparationTooLarge  ... and never will: its frame is past the frame limit
     +-- PreparationUnconfirmed  no final status in time, or the connection closed
     +-- PreparationRefused      the Runtime ended or refused it (`code`)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from allinone.core.errors import CoreError
from allinone.core.gateway.connection import Connection, FrameTooLarge, SendFailed
from allinone.core.gateway.subscriptions import PreparationSubscription
from runtime.proto.errors import PreparationErrorCode
from runtime.proto.execution import (
    ExecutionConfiguration,
    ExecutionPrepare,
    ExecutionRelease,
    ExecutionStart,
    PreparationState,
    PreparationStatus,
)
from runtime.proto.history import HistoryEntry
from runtime.proto.inputs import Message

# States that end a preparation before it could run.
ENDED = frozenset(
    {
        PreparationState.FAILED,
        PreparationState.REJECTED,
        PreparationState.EXPIRED,
        PreparationState.RELEASED,
    }
)


class PreparationError(CoreError):
    """A preparation or start did not reach its goal."""


class PreparationUnsent(PreparationError):
    """The request never entered the send queue; the peer never saw it."""


class PreparationTooLarge(PreparationUnsent):
    """The request's frame is larger than the Runtime reads, so it was not sent (and
    sending it again cannot help); `frame_type` names it."""

    def __init__(self, frame_type: str, message: str) -> None:
        super().__init__(message)
        self.frame_type = frame_type


class PreparationUnconfirmed(PreparationError):
    """No status decided the request in time, or the connection closed first; the
    Runtime's side of it is unknown. `closed` says which."""

    def __init__(self, reason: str, closed: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.closed = closed


class PreparationRefused(PreparationError):
    """The Runtime refused or ended the request with `code`."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Prepared:
    """A `ready` preparation: its request id (which its later statuses carry), the
    subscription to them, and what `execution_start` must name. `reused` says the
    Runtime answered with the session's idle Executor (its memory kept)."""

    connection: Connection
    prep_id: str
    subscription: PreparationSubscription
    executor_id: str
    handle: str
    reused: bool = False


class OpenWrites:
    """Workspace writes (and initialization transfers) this Core has open, per
    Environment wire id: the Runtime refuses to start an execution meanwhile."""

    def __init__(self) -> None:
        self._open: dict[str, int] = {}
        self._settled: dict[str, asyncio.Event] = {}

    @contextlib.contextmanager
    def holding(self, environment_id: str) -> Iterator[None]:
        """Mark a write open on `environment_id` for the duration of the block."""
        self._open[environment_id] = self._open.get(environment_id, 0) + 1
        self._settled.setdefault(environment_id, asyncio.Event()).clear()
        try:
            yield
        finally:
            self._open[environment_id] -= 1
            if not self._open[environment_id]:
                del self._open[environment_id]
                self._settled.pop(environment_id).set()

    def is_open(self, environment_id: str) -> bool:
        return environment_id in self._open

    async def settled(self, environment_id: str) -> None:
        """Return once no write is open on `environment_id`."""
        event = self._settled.get(environment_id)
        if event is not None:
            await event.wait()


class Preparations:
    def __init__(self, new_id: Callable[[str], str]) -> None:
        self.new_id = new_id
        self.writes = OpenWrites()

    async def prepare(
        self,
        connection: Connection,
        session_id: str,
        configuration: ExecutionConfiguration,
        timeout: float,
    ) -> Prepared:
        """Send `execution_prepare` and follow its statuses to `ready` (returned) or an
        ending (raised), all within `timeout`. The subscription stays open on success:
        `start` or `release` ends it."""
        prep_id = self.new_id("prep")
        try:
            sub = connection.subscribe_preparation(prep_id)
            payload = ExecutionPrepare(session_id=session_id, configuration=configuration)
            await connection.send("execution_prepare", prep_id, payload)
        except SendFailed as exc:
            connection.unsubscribe_preparation(prep_id)
            raise _unsent(exc) from exc
        try:
            status = await _deciding(sub, timeout, _readiness)
        except PreparationError:
            connection.unsubscribe_preparation(prep_id)
            raise
        return Prepared(connection, prep_id, sub, status.executor_id, status.handle, status.reused)

    async def start(
        self,
        prepared: Prepared,
        run_id: str,
        messages: list[Message],
        timeout: float,
        environment_id: str = "",
        history: list[HistoryEntry] | None = None,
        resume: str = "",
    ) -> None:
        """Send `execution_start` and wait for `started`, all within `timeout`; the
        preparation's subscription ends either way. `environment_id` (the bound
        Environment's wire id) lets a start refused for an open write be retried once it
        settled. `history` is the committed conversation to rebuild the context from;
        `resume` is the checkpoint cursor a re-claimed turn continues from."""
        connection = prepared.connection
        payload = ExecutionStart(
            executor_id=prepared.executor_id,
            handle=prepared.handle,
            run_id=run_id,
            input=messages,
            history=history,
            resume=resume,
        )
        deadline = asyncio.get_running_loop().time() + timeout
        try:
            while True:
                writing = self._writing(environment_id)
                try:
                    await connection.send("execution_start", prepared.prep_id, payload)
                except FrameTooLarge as exc:
                    await self.release(prepared)  # the handle would wait for its expiry
                    raise _unsent(exc) from exc
                except SendFailed as exc:
                    raise _unsent(exc) from exc
                try:
                    await _deciding(prepared.subscription, _left(deadline), _started)
                    return
                except PreparationRefused as exc:
                    busy = writing or self._writing(environment_id)
                    if not (busy and exc.code == PreparationErrorCode.RESOURCE_UNAVAILABLE):
                        raise
                await self._write_settled(environment_id, deadline)
        finally:
            connection.unsubscribe_preparation(prepared.prep_id)

    def _writing(self, environment_id: str) -> bool:
        return bool(environment_id) and self.writes.is_open(environment_id)

    async def _write_settled(self, environment_id: str, deadline: float) -> None:
        try:
            await asyncio.wait_for(self.writes.settled(environment_id), _left(deadline))
        except TimeoutError as exc:
            raise PreparationUnconfirmed("start_timeout", closed=False) from exc

    async def release(self, prepared: Prepared) -> None:
        """Release a preparation that will not start (best effort: a release that cannot
        be sent leaves the handle to expire on the Runtime)."""
        with contextlib.suppress(SendFailed):
            await prepared.connection.send(
                "execution_release", prepared.prep_id, ExecutionRelease(handle=prepared.handle)
            )
        prepared.connection.unsubscribe_preparation(prepared.prep_id)


def _unsent(exc: SendFailed) -> PreparationUnsent:
    if isinstance(exc, FrameTooLarge):
        return PreparationTooLarge(exc.frame_type, str(exc))
    return PreparationUnsent(str(exc))


def _left(deadline: float) -> float:
    return max(0.0, deadline - asyncio.get_running_loop().time())


def _readiness(status: PreparationStatus) -> bool | None:
    """True when `status` makes a preparation ready, False when it ends it, None when
    it decides nothing yet."""
    if status.state is PreparationState.READY:
        return True
    if status.state in ENDED:
        return False
    return None


def _started(status: PreparationStatus) -> bool | None:
    if status.state is PreparationState.STARTED:
        return True
    if status.state is PreparationState.STARTING:
        return None
    return False


async def _deciding(
    sub: PreparationSubscription,
    timeout: float,
    decides: Callable[[PreparationStatus], bool | None],
) -> PreparationStatus:
    """The first status `decides` calls True (returned) or False (raised as refused),
    within `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise PreparationUnconfirmed("timeout", closed=False)
        try:
            status = await sub.next(remaining)
        except TimeoutError as exc:
            raise PreparationUnconfirmed("timeout", closed=False) from exc
        if status is None:
            reason = sub.error.reason if sub.error else "closed"
            raise PreparationUnconfirmed(reason, closed=True)
        assert isinstance(status, PreparationStatus)
        verdict = decides(status)
        if verdict is True:
            return status
        if verdict is False:
            raise PreparationRefused(status.error_code or "")

"""One Runtime connection: its send queue, capability snapshot and subscriptions.

The connection's reader hands each decoded frame to `route`, which delivers it where the
pure `routing.route` says (statuses to the preparation subscription of their request id,
Run frames to the Run subscription of their Run id); nothing here decides what a frame
means for a Turn.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec

from allinone.core.errors import CoreError
from allinone.core.gateway import routing
from allinone.core.gateway.routing import (
    Nowhere,
    ToHeartbeat,
    ToOperation,
    ToPreparation,
    ToReceipt,
    ToRun,
    ToSteer,
)
from allinone.core.gateway.subscriptions import (
    ObservationError,
    PreparationSubscription,
    RunSubscription,
)
from runtime.proto import codec, limits
from runtime.proto.capabilities import SupportedAgentKind
from runtime.proto.codec import Frame
from runtime.proto.errors import FrameTooLarge as WireFrameTooLarge
from runtime.proto.execution import PreparationStatus
from runtime.proto.heartbeat import Heartbeat
from runtime.proto.interactions import InteractionDecisionAck
from runtime.proto.steering import PromptSteerAck

log = logging.getLogger(__name__)

CONNECTION_CLOSED = "connection_closed"
CONNECTION_REPLACED = "connection_replaced"
DEVICE_REVOKED = "device_revoked"
INVALID_HEARTBEAT = "invalid_heartbeat"
SHUTDOWN = "shutdown"


def silent(seconds: float) -> str:
    """The close reason of a connection that sent no frame within the read timeout."""
    return f"no frame for {seconds:g} s"


# WebSocket close codes Core sends. 4001 is permanent: the device was revoked or retired
# and its Runtime stops reconnecting; anything else lets it reconnect.
CLOSE_NORMAL = 1000
CLOSE_POLICY_VIOLATION = 1008
CLOSE_RETIRED = 4001


class SendFailed(CoreError):
    """The envelope did not enter the send queue; the peer never saw it."""


class FrameTooLarge(SendFailed):
    """The envelope is larger than the Runtime reads (`limits.MAX_FRAME_BYTES`), so it
    was not sent: the Runtime would have closed the connection on it, failing every
    turn the connection carries. Only the operation that made it fails, and it is known
    never to have been delivered. `size` is its encoded length."""

    def __init__(self, frame_type: str, size: int) -> None:
        super().__init__(
            f"the {frame_type} frame of {size} bytes exceeds the"
            f" {limits.MAX_FRAME_BYTES}-byte frame limit"
        )
        self.frame_type = frame_type
        self.size = size


class Connection:
    def __init__(self, device_id: str, connection_id: str) -> None:
        self.device_id = device_id
        self.connection_id = connection_id
        # None until the first heartbeat: capabilities are unknown, never inferred.
        self.kinds: dict[str, SupportedAgentKind] | None = None
        self.last_heartbeat_ts = 0
        self.active_requests = 0
        self.outbox: asyncio.Queue[bytes | None] = asyncio.Queue(limits.SEND_QUEUE_ENVELOPES)
        self._preparations: dict[str, PreparationSubscription] = {}
        self._runs: dict[str, RunSubscription] = {}
        self._acks: dict[str, asyncio.Future[InteractionDecisionAck]] = {}
        self._steers: dict[tuple[str, str], asyncio.Queue[PromptSteerAck]] = {}
        self._interaction_runs: dict[str, str] = {}
        self._operations: dict[str, asyncio.Queue[Frame]] = {}
        # Set once Core asked this Runtime to shut down: nothing new is claimed to it.
        self.shutting_down = False
        self.closed = asyncio.Event()
        self.close_reason = ""
        self.close_code = CLOSE_NORMAL

    # Sending. A successful send proves only that the envelope entered the local queue.
    async def send(self, type_: str, id_: str, payload: msgspec.Struct) -> None:
        """Queue one envelope; its type is the payload's own, which `type_` restates.
        Raises FrameTooLarge, queueing nothing, for an envelope the Runtime would refuse
        for its size, and SendFailed when the connection is closed or its queue stays
        full."""
        if self.closed.is_set():
            raise SendFailed(self.close_reason or CONNECTION_CLOSED)
        assert codec.type_of(payload) == type_, "the payload names its own type"
        try:
            data = codec.encode_to_send(payload, id_)
        except WireFrameTooLarge as exc:
            log.warning("%s frame %s not sent: %s", type_, id_, exc)
            raise FrameTooLarge(type_, exc.size) from exc
        if not self.outbox.full():
            self.outbox.put_nowait(data)  # the common case: no timer, no task
            return
        try:
            async with asyncio.timeout(limits.WRITE_DEADLINE_SECONDS):
                await self.outbox.put(data)
        except TimeoutError as exc:
            raise SendFailed("send_queue_full") from exc

    # Subscriptions: subscribe before sending the request they observe.
    def subscribe_preparation(self, request_id: str) -> PreparationSubscription:
        if len(self._preparations) >= limits.MAX_PREPARATION_SUBSCRIPTIONS:
            raise SendFailed("preparation_subscriptions_exhausted")
        sub = PreparationSubscription(limits.PREPARATION_SUBSCRIPTION_BUFFER)
        if self.closed.is_set():
            sub.fail(self.close_reason)
        self._preparations[request_id] = sub
        return sub

    def unsubscribe_preparation(self, request_id: str) -> None:
        self._preparations.pop(request_id, None)

    def subscribe_run(self, run_id: str) -> RunSubscription:
        sub = RunSubscription(limits.RUN_SUBSCRIPTION_BUFFER)
        if self.closed.is_set():
            sub.fail(self.close_reason)
        self._runs[run_id] = sub
        return sub

    def unsubscribe_run(self, run_id: str) -> None:
        self._runs.pop(run_id, None)

    def run_subscription(self, run_id: str) -> RunSubscription | None:
        return self._runs.get(run_id)

    def expect_ack(self, delivery_id: str) -> asyncio.Future[InteractionDecisionAck]:
        """Register for the receipt of one delivery before sending it."""
        future: asyncio.Future[InteractionDecisionAck] = asyncio.get_running_loop().create_future()
        if self.closed.is_set():
            future.set_exception(ObservationError(self.close_reason))
        else:
            self._acks[delivery_id] = future
        return future

    def forget_ack(self, delivery_id: str) -> None:
        self._acks.pop(delivery_id, None)

    def expect_steer(self, run_id: str, input_id: str) -> asyncio.Queue[PromptSteerAck]:
        queue: asyncio.Queue[PromptSteerAck] = asyncio.Queue()
        self._steers[(run_id, input_id)] = queue
        return queue

    def expect_results(self, operation_id: str) -> asyncio.Queue[Frame]:
        """Register for the replies to a workspace operation or transfer before sending."""
        queue: asyncio.Queue[Frame] = asyncio.Queue()
        self._operations[operation_id] = queue
        return queue

    def forget_results(self, operation_id: str) -> None:
        self._operations.pop(operation_id, None)

    def forget_steer(self, run_id: str, input_id: str) -> None:
        self._steers.pop((run_id, input_id), None)

    # Receiving.
    async def route(self, frame: Frame) -> None:
        """Deliver one decoded frame to the destination `routing.route` names."""
        match routing.route(frame, self._interaction_runs):
            case ToHeartbeat(heartbeat):
                self._heartbeat(heartbeat)
            case ToPreparation(request_id, status):
                sub = self._preparations.get(request_id)
                if sub is not None and sub.accept(status):
                    await sub.put(status, limits.RECEIPT_SEND_TIMEOUT_SECONDS)
            case ToReceipt(run_id, ack):
                await self._receipt(run_id, ack, frame)
            case ToOperation(operation_id):
                operation = self._operations.get(operation_id)
                if operation is not None:
                    operation.put_nowait(frame)
            case ToSteer(run_id, steer):
                queue = self._steers.get((run_id, steer.input_id))
                if queue is not None:
                    queue.put_nowait(steer)
            case ToRun(run_id, opens, last):
                if opens is not None:
                    self._interaction_runs[opens] = run_id
                await self._to_run(run_id, frame, last)
            case Nowhere():
                log.warning("frame %s has no route on this connection", frame.type)

    async def _receipt(self, run_id: str, ack: InteractionDecisionAck, frame: Frame) -> None:
        waiter = self._acks.pop(ack.delivery_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(ack)
        run_sub = self._runs.get(run_id)
        if run_sub is not None:
            # In order with the Run's frames, so what the receipt proves is projected
            # before what the harness did next.
            await run_sub.put(frame, limits.RECEIPT_SEND_TIMEOUT_SECONDS)

    async def _to_run(self, run_id: str, frame: Frame, last: bool) -> None:
        run = self._runs.get(run_id)
        if run is None:
            log.warning("frame %s for an unknown run dropped", frame.type)
            return
        await run.put(frame, limits.RECEIPT_SEND_TIMEOUT_SECONDS)
        if last:
            run.finish()
            self._runs.pop(run_id, None)

    def _heartbeat(self, heartbeat: Heartbeat) -> None:
        self.kinds = {kind.kind: kind for kind in heartbeat.supported_agent_kinds}
        self.last_heartbeat_ts = heartbeat.ts
        self.active_requests = heartbeat.active_requests

    def invalidate(self) -> None:
        """An invalid heartbeat clears the admission snapshot."""
        self.kinds = None

    def close(self, reason: str, code: int = CLOSE_NORMAL) -> None:
        """Close every subscription with an observation error; nothing is fabricated.
        The gateway then closes the socket with `code`; unsent envelopes are dropped."""
        if self.closed.is_set():
            return
        self.close_reason = reason
        self.close_code = code
        self.closed.set()
        for prep in self._preparations.values():
            prep.fail(reason)
        for run in self._runs.values():
            run.fail(reason)
        self._preparations.clear()
        self._runs.clear()
        for waiter in self._acks.values():
            if not waiter.done():
                waiter.set_exception(ObservationError(reason))
        self._acks.clear()
        while not self.outbox.empty():
            self.outbox.get_nowait()
        self.outbox.put_nowait(None)  # wakes the writer, which closes the socket

    def available_kind(self, kind: str) -> SupportedAgentKind | None:
        if self.kinds is None:
            return None
        declared = self.kinds.get(kind)
        return declared if declared is not None and declared.available else None

    def describe(self) -> dict[str, Any]:
        return {
            "device_id": self.device_id,
            "declared": self.kinds is not None,
            "agent_kinds": sorted(k for k, v in (self.kinds or {}).items() if v.available),
        }


__all__ = ["Connection", "FrameTooLarge", "PreparationStatus", "SendFailed"]

"""Delivery of a running turn's client inputs to its Runtime, with receipts.

One Delivery per running turn. When woken it delivers, in admission order: steering
messages (`prompt_steer` with a durable receipt, one at a time, the next only after the
previous one's final receipt), then function results and decisions (each with a fresh
delivery id, waiting for `interaction_decision_ack`).

A harness takes a steered message at its next model call, so a message's `accepted`
receipt may come only once the turn got what it waits for: after its `written` receipt
the wait for acceptance runs beside the loop, and function results and decisions are
never held behind it. While the turn waits on the client for something not answered yet
(a function result, an approval, a choice), steering messages are held (`pending`): the
Run could not take them before that answer, and a message Core still holds continues
the turn after a crash, where one written to a Run that is gone would be unknown. They
are delivered, before the answer, once it is admitted.

Every state change is committed; a delivery whose receipt never came is recorded
`unknown` and is never sent again. Every write checks the Run's fencing token first:
once the claim was superseded, delivery stops and writes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from allinone.core.gateway.connection import Connection, FrameTooLarge, SendFailed
from allinone.core.gateway.subscriptions import ObservationError
from allinone.core.ids import Clock, Ids
from allinone.core.orchestration.projector import Fenced, Projector, RunProjection
from allinone.core.orchestration.timers import PRODUCTION, Timers
from allinone.core.recorder import Recorder
from allinone.core.sessions.wire import content_parts, wire_messages
from allinone.core.tasks import cancel_and_wait
from runtime.proto.errors import ValidationError
from runtime.proto.functions import FunctionResult
from runtime.proto.inputs import InputContent, InputText, Message
from runtime.proto.interactions import (
    InteractionDecisionAck,
    PermissionDecision,
    PromptForUserChoiceDecision,
    QuestionAnswer,
)
from runtime.proto.steering import PromptSteer, PromptSteerAck, ReceiptStage
from storage import interactions
from storage.database import Database, Reader, Tx

log = logging.getLogger(__name__)


def messages_of(payload: dict[str, Any]) -> list[Message]:
    return wire_messages(payload["input"])


class Delivery:
    def __init__(
        self,
        db: Database,
        connection: Connection,
        run: RunProjection,
        projector: Projector,
        recorder: Recorder,
        ids: Ids,
        clock: Clock,
        timers: Timers = PRODUCTION,
    ) -> None:
        self._timers = timers
        self._db = db
        self._connection = connection
        self._run = run
        self._projector = projector
        self._recorder = recorder
        self._ids = ids
        self._clock = clock
        self.wake = asyncio.Event()
        self.wake.set()  # deliver anything admitted before the run started
        self._task: asyncio.Task[None] | None = None
        # The wait for the final receipt of the steering message last written, if any.
        self._accepting: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self.run(), name=f"delivery-{self._run.turn_id}")

    async def stop(self) -> None:
        """Stop delivering (idempotent). A message whose delivery was under way stays in
        the state last committed; nothing is sent after this returns."""
        if self._task is not None:
            await stop(self._task)

    async def run(self) -> None:
        try:
            while not self._connection.closed.is_set():
                await self.wake.wait()
                self.wake.clear()
                # What waits, in one read; anything admitted after it sets `wake` again.
                steering, calls, answered = await self._db.read_now(self._waiting)
                for row in steering:
                    if not await self._steer(row):
                        break  # the next one waits for this one's acceptance
                await self._results(calls)
                await self._decisions(answered)
        except Fenced:
            log.warning("turn %s was fenced; its deliveries stop", self._run.turn_id)
        finally:
            if self._accepting is not None:
                await stop(self._accepting)

    def _steering_free(self) -> bool:
        """Whether no steering message waits for its acceptance."""
        task = self._accepting
        if task is None:
            return True
        if not task.done():
            return False
        self._accepting = None
        if not task.cancelled() and task.exception() is not None:
            log.warning("turn %s: a steering receipt was lost", self._run.turn_id)
        return True

    async def _write(self, job: Callable[[Tx], Awaitable[None]]) -> None:
        """Commit `job` only while the Run still holds the turn's fencing token."""

        async def fenced(tx: Tx) -> None:
            await self._projector.check_fence(tx, self._run)
            await job(tx)

        await self._db.write(fenced)

    async def _waiting(
        self, r: Reader
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """Steering messages, function results and decisions waiting for delivery (a
        list is read only when something waits in it). Steering messages are read only
        while none waits for its acceptance and the turn waits on no unanswered request
        (see the module docstring)."""
        turn_id = self._run.turn_id
        steering, calls, answered = await interactions.waiting_for_delivery(r, turn_id)
        steering = (
            steering and self._steering_free() and not await interactions.awaits_client(r, turn_id)
        )
        return (
            await interactions.steering_inputs(r, turn_id, "pending") if steering else [],
            await interactions.calls_to_deliver(r, turn_id) if calls else [],
            await interactions.interactions_to_deliver(r, turn_id) if answered else [],
        )

    async def _set_input(self, seq: int, state: str) -> None:
        async def job(tx: Tx) -> None:
            await interactions.set_input_state(tx, seq, state)

        await self._write(job)

    async def _steer(self, row: dict[str, Any]) -> bool:
        """Deliver one steering message up to its `written` receipt. False when it was
        written: its acceptance is then awaited beside the loop (`_accepting`)."""
        run_id = self._run.turn_id
        input_id = f"input_{row['seq']}"
        receipts = self._connection.expect_steer(run_id, input_id)
        stage = ReceiptStage.UNKNOWN
        try:
            await self._set_input(row["seq"], "delivered")
            await self._connection.send(
                "prompt_steer",
                run_id,
                PromptSteer(
                    input_id=input_id, input=messages_of(row["payload"]), durable_receipt=True
                ),
            )
            stage = await self._receipt(receipts, input_id, self._timers.steer_written_seconds)
        except FrameTooLarge:
            stage = ReceiptStage.REFUSED  # never sent: known not to have reached it
        except (SendFailed, TimeoutError, ObservationError):
            stage = ReceiptStage.UNKNOWN
        finally:
            if stage is not ReceiptStage.WRITTEN:
                self._connection.forget_steer(run_id, input_id)
        if stage is not ReceiptStage.WRITTEN:
            await self._settle_steer(row["seq"], stage)
            return True
        await self._set_input(row["seq"], "written")
        self._accepting = asyncio.create_task(
            self._acceptance(row["seq"], input_id, receipts), name=f"steer-{input_id}"
        )
        return False

    async def _acceptance(
        self, seq: int, input_id: str, receipts: asyncio.Queue[PromptSteerAck]
    ) -> None:
        """Wait for a written message's final receipt (for as long as the Run lives),
        record it, and wake the loop for the next message."""
        try:
            stage = await self._receipt(receipts, input_id, None)
        except (TimeoutError, ObservationError):
            stage = ReceiptStage.UNKNOWN
        finally:
            self._connection.forget_steer(self._run.turn_id, input_id)
        try:
            await self._settle_steer(seq, stage)
        except Fenced:
            log.warning("turn %s was fenced; its steering stops", self._run.turn_id)
            return
        self.wake.set()

    async def _settle_steer(self, seq: int, stage: ReceiptStage) -> None:
        state = {ReceiptStage.ACCEPTED: "applied", ReceiptStage.REFUSED: "refused"}.get(
            stage, "unknown"
        )
        await self._set_input(seq, state)

    async def _receipt(
        self, receipts: asyncio.Queue[PromptSteerAck], input_id: str, timeout: float | None
    ) -> ReceiptStage:
        getter = asyncio.ensure_future(receipts.get())
        closed = asyncio.ensure_future(self._connection.closed.wait())
        try:
            done, _ = await asyncio.wait(
                {getter, closed}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            closed.cancel()
            if not getter.done():
                getter.cancel()
        if getter not in done:
            raise TimeoutError(input_id)
        try:
            return getter.result().check(input_id)
        except Exception:
            return ReceiptStage.UNKNOWN

    async def _await_ack(
        self, delivery_id: str, type_: str, envelope_id: str, payload: Any
    ) -> InteractionDecisionAck | None:
        """The delivery's receipt, or None when its outcome is unknown: no receipt in
        time, a lost send, or a receipt that contradicts itself (applied with an error
        code, or refused without a finite one) and so proves nothing. A frame too large
        to send is known never to have been delivered: it reads as a refusal."""
        waiter = self._connection.expect_ack(delivery_id)
        try:
            try:
                await self._connection.send(type_, envelope_id, payload)
            except FrameTooLarge:
                return InteractionDecisionAck(
                    delivery_id=delivery_id, applied=False, error_code="frame_too_large"
                )
            ack = await asyncio.wait_for(waiter, self._timers.receipt_seconds)
            ack.check(delivery_id)
            return ack
        except (SendFailed, TimeoutError, ObservationError, ValidationError):
            return None
        finally:
            self._connection.forget_ack(delivery_id)

    async def _results(self, calls: list[dict[str, Any]]) -> None:
        run = self._run
        for call in calls:
            result = call["result"]
            output = result.get("output")
            parts: list[InputContent]
            if result.get("success"):
                parts = (
                    [InputText(text=output)]
                    if isinstance(output, str)
                    else content_parts(output or [])
                )
            else:
                parts = [InputText(text=result.get("error") or "Tool handler failed.")]
            delivery_id = self._ids.new("dlv")

            async def delivering(
                tx: Tx, call_id: str = call["call_id"], dlv: str = delivery_id
            ) -> None:
                await interactions.set_call_delivering(tx, run.session_id, call_id, dlv)

            await self._write(delivering)
            ack = await self._await_ack(
                delivery_id,
                "function_result",
                run.turn_id,
                FunctionResult(
                    delivery_id=delivery_id,
                    call_id=call["call_id"],
                    success=bool(result.get("success")),
                    content=parts,
                ),
            )
            if ack is None or not ack.applied:  # an applied receipt is projected in order
                await self._set_call(call["call_id"], "refused" if ack else "unknown")

    async def _set_call(self, call_id: str, state: str) -> None:
        async def job(tx: Tx) -> None:
            await interactions.set_call_state(tx, self._run.session_id, call_id, state)

        await self._write(job)

    async def _decisions(self, answered: list[dict[str, Any]]) -> None:
        run = self._run
        for row in answered:
            interaction_id = row["interaction_id"]
            delivery_id = self._ids.new("dlv")
            response = row["response"]
            payload: PermissionDecision | PromptForUserChoiceDecision
            if row["kind"] == "permission":
                type_ = "permission_decision"
                payload = PermissionDecision(
                    delivery_id=delivery_id,
                    approved=response["decision"] == "approve",
                    message=str(response.get("message") or ""),
                )
            else:
                type_ = "prompt_for_user_choice_decision"
                payload = PromptForUserChoiceDecision(
                    delivery_id=delivery_id,
                    cancelled=bool(response.get("cancelled")),
                    question_answers=[
                        QuestionAnswer(question_id=a["question_id"], answers=list(a["answers"]))
                        for a in response.get("question_answers", [])
                    ],
                )
            await self._set_interaction(interaction_id, "delivering")
            ack = await self._await_ack(delivery_id, type_, interaction_id, payload)
            state = (
                "applied"
                if ack is not None and ack.applied
                else ("refused" if ack is not None else "unknown")
            )

            async def job(tx: Tx, iid: str = interaction_id, st: str = state) -> None:
                await interactions.set_interaction_state(tx, run.session_id, iid, st)
                await self._projector.resume_if_clear(
                    tx, run.session_id, run.turn_id, run.fencing_token
                )

            await self._write(job)

    async def _set_interaction(self, interaction_id: str, state: str) -> None:
        async def job(tx: Tx) -> None:
            await interactions.set_interaction_state(
                tx, self._run.session_id, interaction_id, state
            )

        await self._write(job)


async def stop(task: asyncio.Task[None]) -> None:
    await cancel_and_wait(task)


__all__ = ["Delivery", "messages_of", "stop"]

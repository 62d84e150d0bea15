"""One builtin turn: the model/tool loop.

    add the turn's input                       (or restore it from a resume cursor)
    repeat:
        add steered input                      (take_steered between model calls)
        checkpoint `between_model_calls`       (cursor.py; a pause stops the Run here)
        one streaming model call               (frames emitted as events arrive)
        tool calls?  run each, add results, go again
                                               (a client-executed function's wait is an
                                               `awaiting_function_result` checkpoint, a
                                               command's approval `awaiting_approval`)
        steered input arrived?  go again
        otherwise the turn is done

Frames: each text item streams as `output_message` in_progress, `delta`s, then
`output_message` completed (or incomplete when the reply was cut short), its phase
`commentary` when the same model reply also called tools and `final_answer` otherwise;
reasoning text becomes one `thinking` frame per reasoning item. The turn's run manifest
(digests of the system prompt and of the last tool list the model received, the
provider's request ids, the last stop reason, how many history entries the context
window left out) is annotated on the `done` frame as `x_corebox_manifest` (JSON). Usage
is a cumulative `usage` frame after each model call (seed 000: each snapshot replaces
the previous one), so Core holds the turn's usage so far when the turn later fails or
is cancelled, and checks the session's budget at every call. Once a model call reports
no usage the total is unknown: nothing more is sent, and the turn keeps what the calls
before it reported. Cancellation propagates from the model stream or the tool being
awaited; the conversation is settled either way.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

from runtime.harness.base import NativeFailure, RunContext
from runtime.harness.builtin import cursor
from runtime.harness.builtin.conversation import (
    AssistantMessage,
    Conversation,
    Entry,
    ToolCall,
    ToolResult,
)
from runtime.harness.builtin.model import (
    Finished,
    ModelProtocol,
    Reasoning,
    Sent,
    Settings,
    TextDelta,
    TextDone,
    ToolRequest,
    Usage,
    digest_of,
)
from runtime.harness.builtin.tools import Toolbox, function_output
from runtime.proto import run as wire
from runtime.proto.inputs import MessageInput

log = logging.getLogger(__name__)

MAX_ROUNDS = 64


class BuiltinTurn:
    def __init__(
        self,
        context: RunContext,
        conversation: Conversation,
        protocol: ModelProtocol,
        toolbox: Toolbox,
        settings: Settings,
        context_window: int = 0,
    ) -> None:
        self._context = context
        self._conversation = conversation
        self._protocol = protocol
        self._toolbox = toolbox
        self._settings = settings
        self._context_window = context_window
        self._usage: Usage | None = Usage(0, 0, 0)
        self.rounds = 0
        self._base = len(conversation.entries)  # entries before the turn's input
        self.manifest: dict[str, Any] = {
            "system_prompt_digest": digest_of(conversation.system_prompt),
            "model": settings.model,
            "protocol": protocol.name,
            "tools_digest": None,
            "request_ids": [],
            "stop_reason": None,
            "history_omitted": 0,
        }

    async def play(self, messages: MessageInput, resume: str = "") -> None:
        """Play the turn from its input, or from the checkpoint `resume` names (the
        input is then already in the restored conversation)."""
        restored = self._restore(resume) if resume else None
        if restored is None:
            self._conversation.add_input(messages)
        try:
            if restored is not None:
                await self._finish_tools(restored)
            while True:
                self._take_steered()
                if self.rounds >= MAX_ROUNDS:
                    raise NativeFailure(f"the model kept calling tools ({MAX_ROUNDS} calls)")
                await self._checkpoint()
                requests = await self._round()
                if requests:
                    await self._run_tools(requests)
                    continue
                if self._take_steered():
                    continue
                break
        finally:
            self._conversation.settle()
            self._context.annotate("x_corebox_manifest", json.dumps(self.manifest))

    async def _run_tools(self, requests: list[ToolRequest]) -> None:
        """Run the model's tool calls in order, each result added as it comes."""
        for request in requests:
            output = await self._toolbox.run(
                request, self._context, self._waiting_cursor, self._asking_cursor
            )
            self._conversation.add(ToolResult(request.call_id, output))

    async def _finish_tools(self, restored: cursor.TurnState) -> None:
        """After a restore: the result of the call the turn waited for (a function's
        result, or a command's approval and then the command), then the tool calls that
        never started."""
        answered = {e.call_id for e in self._turn_entries() if isinstance(e, ToolResult)}
        pending = [
            ToolRequest(e.call_id, e.name, e.arguments)
            for e in self._turn_entries()
            if isinstance(e, ToolCall) and e.call_id not in answered
        ]
        if restored.waiting is not None and pending:
            outcome = await self._context.wait_function(restored.waiting)
            self._conversation.add(ToolResult(pending[0].call_id, function_output(outcome)))
            pending = pending[1:]
        elif restored.permission is not None and pending:
            output = await self._toolbox.resume_command(
                pending[0], restored.permission, self._context
            )
            self._conversation.add(ToolResult(pending[0].call_id, output))
            pending = pending[1:]
        await self._run_tools(pending)

    def _turn_entries(self) -> list[Entry]:
        return self._conversation.entries[self._base :]

    def _waiting_cursor(self, call_id: str) -> str:
        """The cursor of the checkpoint while `call_id`'s result is awaited ("" when the
        turn's state does not fit one)."""
        return cursor.encode(self._state(waiting=call_id)) or ""

    def _asking_cursor(self, request_id: str) -> str:
        """The cursor of the checkpoint while a command's approval (`request_id`) is
        awaited ("" when the turn's state does not fit one)."""
        return cursor.encode(self._state(permission=request_id)) or ""

    def _state(self, waiting: str | None = None, permission: str | None = None) -> cursor.TurnState:
        return cursor.TurnState(
            self._base,
            self._turn_entries(),
            self.rounds,
            self._usage,
            self.manifest,
            waiting,
            permission,
        )

    def _restore(self, resume: str) -> cursor.TurnState:
        """Put the turn back where its checkpoint was taken; returns the checkpoint's
        state (what it waits for, if anything). The entries before the turn are the
        Executor's memory (rebuilt from Core's history when the Executor is new); the
        turn's own come from the cursor."""
        state = cursor.decode(resume)  # CursorInvalid (a NativeFailure) fails the Run
        entries = self._conversation.entries
        if self._context.history is None:
            del entries[state.base :]  # what this turn added before it paused
        self._base = len(entries)
        entries.extend(state.entries)
        self.rounds = state.rounds
        self._usage = state.usage
        self.manifest = {**self.manifest, **state.manifest}
        return state

    async def _checkpoint(self) -> None:
        """Declare the safe point before a model call (see cursor.py)."""
        text = cursor.encode(self._state())
        if text is None:
            log.debug("the turn's state exceeds a resume cursor: no checkpoint here")
            return
        await self._context.checkpoint("between_model_calls", text)

    def _take_steered(self) -> bool:
        steered = self._context.take_steered()
        for messages in steered:
            self._conversation.add_input(messages)
        return bool(steered)

    async def _round(self) -> list[ToolRequest]:
        """One model call. Returns the tool calls it asked for."""
        self.rounds += 1
        sequences: dict[str, int] = {}
        finished: list[TextDone] = []
        requests: list[ToolRequest] = []
        counted: Usage | None = None
        entries = self._conversation.window(self._context_window, self._settings.max_output_tokens)
        omitted = len(self._conversation.entries) - len(entries)
        self.manifest["history_omitted"] = max(self.manifest["history_omitted"], omitted)
        stream = self._protocol.stream(
            self._conversation.system_prompt, entries, self._toolbox.specs(), self._settings
        )
        async for event in stream:
            if isinstance(event, Sent):
                self.manifest["tools_digest"] = event.tools_digest
                if event.request_id:
                    self.manifest["request_ids"].append(event.request_id)
            elif isinstance(event, TextDelta):
                await self._open(event.item_id, sequences)
                sequences[event.item_id] += 1
                await self._context.emit(
                    "delta",
                    wire.Delta(
                        item_id=event.item_id, delta=event.text, sequence=sequences[event.item_id]
                    ),
                )
            elif isinstance(event, TextDone):
                await self._open(event.item_id, sequences)
                finished.append(event)
            elif isinstance(event, Reasoning):
                await self._context.emit(
                    "thinking", wire.Thinking(text=event.text, item_id=event.item_id)
                )
            elif isinstance(event, ToolRequest):
                requests.append(event)
            elif isinstance(event, Usage):
                counted = event
            elif isinstance(event, Finished):
                log.debug("model call %d finished: %s", self.rounds, event.reason)
                self.manifest["stop_reason"] = event.reason
        self._add_usage(counted)
        phase: Literal["commentary", "final_answer"] = "commentary" if requests else "final_answer"
        for done in finished:
            await self._context.emit(
                "output_message",
                wire.OutputMessage(
                    id=done.item_id,
                    status="completed" if done.complete else "incomplete",
                    phase=phase,
                    text=done.text,
                ),
            )
            self._conversation.add(AssistantMessage(done.text))
        for request in requests:
            self._conversation.add(ToolCall(request.call_id, request.name, request.arguments))
        if self._usage is not None:
            await self._report_usage(self._usage)
        return requests

    async def _open(self, item_id: str, sequences: dict[str, int]) -> None:
        if item_id not in sequences:
            sequences[item_id] = 0
            await self._context.emit(
                "output_message", wire.OutputMessage(id=item_id, status="in_progress")
            )

    def _add_usage(self, counted: Usage | None) -> None:
        if counted is None or self._usage is None:
            self._usage = None  # one call without a report makes the total unknown
            return
        total = self._usage
        self._usage = Usage(
            input_tokens=total.input_tokens + counted.input_tokens,
            output_tokens=total.output_tokens + counted.output_tokens,
            total_tokens=total.total_tokens + counted.total_tokens,
            cached_input_tokens=total.cached_input_tokens + counted.cached_input_tokens,
            reasoning_output_tokens=total.reasoning_output_tokens + counted.reasoning_output_tokens,
        )

    async def _report_usage(self, usage: Usage) -> None:
        """Send the turn's cumulative usage (the previous run's calls included after a
        resume: the cursor carries them)."""
        counts = wire.TokenCounts(
            input_tokens=usage.input_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            output_tokens=usage.output_tokens,
            reasoning_output_tokens=usage.reasoning_output_tokens,
            total_tokens=usage.total_tokens,
        )
        await self._context.emit(
            "usage",
            wire.Usage(
                tokens=counts,
                provider=f"builtin:{self._protocol.name}",
                model=self._settings.model,
            ),
        )

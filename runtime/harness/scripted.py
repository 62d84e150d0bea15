"""`scripted`: a deterministic demo harness with no model (reference/scripted-harness.md).

It reads the turn's user text; lines starting with `/` and a directive word are
directives, run top to bottom; other lines are plain text, replied verbatim when the turn
has no `/say`. Replies stream as `output_message` in_progress, deltas of at most 16
characters, then `output_message` completed with the full text. It never pretends to be a
model: usage without `/usage` is a word count, labelled `scripted-word-count`.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from typing import Literal

from runtime.harness.base import RunSink
from runtime.proto import run as wire
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.execution import ExecutionConfiguration
from runtime.proto.inputs import MessageInput, text_of

DELTA_CHARS = 16
Phase = Literal["commentary", "final_answer"]
DIRECTIVES = (
    "say",
    "think",
    "call",
    "permission",
    "choose",
    "command",
    "write",
    "sleep",
    "hang",
    "fail",
    "usage",
    "stream",
)

DECLARATION = AgentKindCapabilities(
    subagent_observations=False,
    streaming=True,
    permissions=True,
    usage=True,
    resume=True,
    native_session_recovery=True,
    steering=True,
    message_items=True,
    tool_observations=True,
    environment_none=True,
    local_environment=True,
    preparation=True,
    workspace_read_preparation=True,
    workspace_output_export=True,
    programmatic_tool_calling_disable=True,
    web_search_control=False,
    execution_controls=True,
    text_verbosity=False,
    structured_output=False,
    tool_search=False,
    message_images=False,
    function_result_images=False,
    subagent_control=True,
    durable_input_receipts=True,
    durable_turns=True,
    function_tools=True,
    mcp_http_tools=False,
    mcp_http_required=False,
    mcp_http_bearer_auth=False,
)


@dataclass(frozen=True)
class Line:
    directive: str  # "" for plain text
    argument: str


def parse(text: str) -> list[Line]:
    lines: list[Line] = []
    for raw in text.split("\n"):
        if raw.startswith("/"):
            word, _, rest = raw[1:].partition(" ")
            if word in DIRECTIVES:
                lines.append(Line(word, rest))
                continue
        lines.append(Line("", raw))
    return lines


class ScriptedFailure(Exception):
    """A directive asked the turn to fail; carries the engine failure code."""

    def __init__(self, code: str, message: str, http_status: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.http_status = http_status


class ScriptedExecutor:
    def __init__(self, executor_id: str, configuration: ExecutionConfiguration) -> None:
        self.executor_id = executor_id
        self._configuration = configuration

    async def close(self) -> None:
        return None

    async def run(self, run_id: str, messages: MessageInput, sink: RunSink) -> None:
        turn = _ScriptedTurn(sink, self._configuration)
        await turn.play(text_of(messages))


class _ScriptedTurn:
    def __init__(self, sink: RunSink, configuration: ExecutionConfiguration) -> None:
        self._sink = sink
        self._configuration = configuration
        self._output_words = 0
        self._usage_reported = False

    async def play(self, text: str) -> None:
        lines = parse(text)
        input_words = len(text.split())
        says = sum(1 for line in lines if line.directive in ("say", "stream"))
        plain = "\n".join(line.argument for line in lines if not line.directive)
        replies = says if says else 1
        sent = 0
        try:
            for line in lines:
                if line.directive in ("say", "stream"):
                    sent += 1
                    phase: Phase = "final_answer" if sent == replies else "commentary"
                    body = (
                        line.argument
                        if line.directive == "say"
                        else "x" * _int(line.argument, "stream")
                    )
                    await self._reply(
                        body, phase, max_delta=1 if line.directive == "stream" else DELTA_CHARS
                    )
                elif line.directive:
                    await self._directive(line)
            if not says:
                await self._reply(plain, "final_answer")
        except ScriptedFailure as failure:
            await self._sink.emit(
                "error",
                wire.Error(error=str(failure), code=failure.code, http_status=failure.http_status),
            )
        if not self._usage_reported:
            counts = wire.TokenCounts(
                input_tokens=input_words,
                cached_input_tokens=0,
                output_tokens=self._output_words,
                reasoning_output_tokens=0,
                total_tokens=input_words + self._output_words,
            )
            await self._sink.emit(
                "usage", wire.Usage(tokens=counts, provider="scripted-word-count", model="scripted")
            )

    async def _reply(self, text: str, phase: Phase, max_delta: int = DELTA_CHARS) -> None:
        native_id = f"scripted_msg_{secrets.token_hex(6)}"
        await self._sink.emit(
            "output_message", wire.OutputMessage(id=native_id, status="in_progress", phase=phase)
        )
        for sequence, start in enumerate(range(0, len(text), max_delta), start=1):
            await self._sink.emit(
                "delta",
                wire.Delta(
                    item_id=native_id, delta=text[start : start + max_delta], sequence=sequence
                ),
            )
        await self._sink.emit(
            "output_message",
            wire.OutputMessage(
                id=native_id,
                status="completed",
                phase=phase,
                text=text,
            ),
        )
        self._output_words += len(text.split())

    async def _directive(self, line: Line) -> None:
        argument = line.argument
        if line.directive == "sleep":
            await asyncio.sleep(_int(argument, "sleep") / 1000)
        elif line.directive == "hang":
            await asyncio.Event().wait()
        elif line.directive == "fail":
            code, _, status = argument.strip().partition(" ")
            raise ScriptedFailure(
                code, f"scripted failure: {code}", _int(status, "fail") if status.strip() else 0
            )
        elif line.directive == "usage":
            parts = argument.split()
            if len(parts) != 2:
                raise ScriptedFailure("invalid_request", "/usage needs INPUT and OUTPUT")
            inp, out = _int(parts[0], "usage"), _int(parts[1], "usage")
            counts = wire.TokenCounts(
                input_tokens=inp,
                cached_input_tokens=0,
                output_tokens=out,
                reasoning_output_tokens=0,
                total_tokens=inp + out,
            )
            await self._sink.emit(
                "usage", wire.Usage(tokens=counts, provider="scripted", model="scripted")
            )
            self._usage_reported = True
        elif line.directive == "think":
            await self._sink.emit(
                "thinking",
                wire.Thinking(text=argument, item_id=f"scripted_rs_{secrets.token_hex(6)}"),
            )
        elif line.directive == "command":
            call_id = f"scripted_cmd_{secrets.token_hex(6)}"
            before = wire.ToolObservation(
                kind="command_execution", status="in_progress", command=argument
            )
            await self._sink.emit(
                "tool_call",
                wire.ToolCall(id=call_id, name="shell", stage="before", observation=before),
            )
            after = wire.ToolObservation(
                kind="command_execution",
                status="completed",
                command=argument,
                exit_code=0,
                output="ok",
                duration_ms=0,
            )
            await self._sink.emit(
                "tool_call",
                wire.ToolCall(id=call_id, name="shell", stage="after", observation=after),
            )
        else:
            raise ScriptedFailure(
                "invalid_request", f"/{line.directive} is not available in this build yet"
            )


def _int(text: str, directive: str) -> int:
    try:
        value = int(text.strip())
    except ValueError as exc:
        raise ScriptedFailure("invalid_request", f"/{directive} needs a whole number") from exc
    if value < 0:
        raise ScriptedFailure("invalid_request", f"/{directive} needs a positive number")
    return value


class ScriptedHarness:
    kind = "scripted"
    version = "1"
    declaration = DECLARATION

    def available(self) -> bool:
        return True

    async def create_executor(
        self, executor_id: str, configuration: ExecutionConfiguration
    ) -> ScriptedExecutor:
        return ScriptedExecutor(executor_id, configuration)

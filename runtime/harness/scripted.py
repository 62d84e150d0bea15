"""`scripted`: a deterministic demo harness with no model (its directives are listed in the README).

It reads the turn's user text; lines starting with `/` and a directive word are
directives, run top to bottom; other lines are plain text, replied verbatim when the turn
has no `/say`. `/ack` replies one short line naming the last block of quoted (`> `)
lines instead (the agent handler's offline reply for messaging). Replies stream as
`output_message` in_progress, deltas of at most 16 characters, then `output_message`
completed with the full text. It never pretends to be a model: usage without `/usage` is
a word count, labelled `scripted-word-count`.

`/subagent TEXT` (only when Core enabled subagents, `multi_agent.enabled`): opens a
subagent whose task is TEXT (unnamed: Core names it `subagent-N`, N counting the
session's subagents), plays its one turn (the user message TEXT, the reply TEXT) and
closes it, reporting each step to Core as subagent observation frames; `{subagent}` in a
later directive is its reply. Without
`multi_agent.enabled` it fails the turn with `invalid_request`.

Checkpoints: before each directive (`between_model_calls`) and while waiting for a
function result, approval or choice, the harness sends its resume cursor: the
directives still to run, the values substituted so far, the word counts, and the
request it waits for. A Run started with that cursor continues there: it re-registers
the request it was waiting for without sending it again, and never repeats a directive
that ran before the checkpoint.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections import deque
from dataclasses import dataclass
from typing import Literal

from runtime.errors import RuntimeFault
from runtime.harness import subagents
from runtime.harness.base import ChoiceOutcome, RunContext
from runtime.harness.commands import CommandRunner
from runtime.proto import run as wire
from runtime.proto.capabilities import AgentKindCapabilities
from runtime.proto.execution import ExecutionConfiguration
from runtime.proto.inputs import MessageInput, text_of
from runtime.proto.interactions import ChoiceOption, ChoiceQuestion
from runtime.workspaces import Binding, WorkspaceError, read_bytes, replace_file

DELTA_CHARS = 16
READ_BYTES = 64 * 1024
Phase = Literal["commentary", "final_answer"]
DIRECTIVES = (
    "say",
    "think",
    "call",
    "permission",
    "choose",
    "command",
    "exec",
    "write",
    "read",
    "sleep",
    "hang",
    "fail",
    "usage",
    "stream",
    "ack",
    "subagent",
)
ACK_PREFIX = "Received: "
ACK_SHOWN_CHARS = 60
REPLIES = ("say", "stream", "ack")

DECLARATION = AgentKindCapabilities(
    subagent_observations=True,
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


def acknowledgement(lines: list[Line]) -> str:
    """`/ack`'s reply: one short line naming the last block of quoted (`> `) lines, or
    an empty reply when there is none or it is itself an acknowledgement (so two
    scripted agents acknowledging each other stop after one exchange)."""
    blocks: list[list[str]] = []
    previous = False
    for line in lines:
        quoted = not line.directive and line.argument.startswith("> ")
        if quoted and not previous:
            blocks.append([])
        if quoted:
            blocks[-1].append(line.argument[2:])
        previous = quoted
    block = blocks[-1] if blocks else []
    received = " ".join(part.strip() for part in block).strip()
    if not received or received.startswith(ACK_PREFIX):
        return ""
    shown = received[:ACK_SHOWN_CHARS] + ("..." if len(received) > ACK_SHOWN_CHARS else "")
    return f'{ACK_PREFIX}"{shown}" ({len(received)} characters).'


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


class ScriptedFailure(RuntimeFault):
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

    async def run(self, run_id: str, messages: MessageInput, context: RunContext) -> None:
        turn = _ScriptedTurn(context, self._configuration)
        if context.resume_cursor:
            await turn.resume(context.resume_cursor)
        else:
            await turn.play(text_of(messages))


class _ScriptedTurn:
    """Plays the directives of one turn, taking steered input between directives."""

    def __init__(self, context: RunContext, configuration: ExecutionConfiguration) -> None:
        self._context = context
        self._configuration = configuration
        self._native_turn = f"scripted_turn_{secrets.token_hex(6)}"
        self._functions = {tool.name for tool in configuration.function_tools}
        self._command_environment = configuration.command_environment
        self._output_words = 0
        self._input_words = 0
        self._usage_reported = False
        self._values: dict[str, str] = {}
        self._lines: deque[Line] = deque()
        self._waiting: dict[str, str] | None = None

    def cursor(self, waiting: dict[str, str] | None = None) -> str:
        """The resume state: what is still to run and what was learnt so far."""
        return json.dumps(
            {
                "v": 1,
                "lines": [[line.directive, line.argument] for line in self._lines],
                "values": self._values,
                "words": [self._input_words, self._output_words],
                "usage": self._usage_reported,
                "waiting": waiting,
            },
            separators=(",", ":"),
        )

    async def resume(self, cursor: str) -> None:
        """Continue from a checkpoint's cursor (see the module docstring)."""
        state = json.loads(cursor)
        self._lines = deque(Line(str(d), str(a)) for d, a in state["lines"])
        self._values = {str(k): str(v) for k, v in state["values"].items()}
        self._input_words, self._output_words = (int(n) for n in state["words"])
        self._usage_reported = bool(state["usage"])
        self._waiting = state.get("waiting")
        await self.play("")

    async def _await_pending(self) -> None:
        waiting, self._waiting = self._waiting, None
        if waiting is None:
            return
        kind, request_id = waiting["kind"], waiting["id"]
        if kind == "call":
            outcome = await self._context.wait_function(request_id)
            self._values["result"] = outcome.text if outcome.success else "error"
        elif kind == "permission":
            approved = await self._context.wait_permission(request_id)
            self._values["decision"] = "approved" if approved else "denied"
        else:
            choice = await self._context.wait_choice(request_id, ("q1",))
            self._values["choice"] = _choice_text(choice)

    async def play(self, text: str) -> None:
        """Run the directives; usage (the word count unless `/usage` reported it) comes
        before a `/fail` error, so an `error` is the Run's last frame before `done`."""
        if text:
            self._queue(text)
        failure: ScriptedFailure | None = None
        try:
            await self._await_pending()
            while True:
                while self._lines:
                    await self._context.checkpoint("between_model_calls", self.cursor())
                    await self._step(self._lines.popleft())
                    self._take_steered()
                self._take_steered()
                if not self._lines:
                    break
        except ScriptedFailure as failed:
            failure = failed
        if not self._usage_reported:
            counts = wire.TokenCounts(
                input_tokens=self._input_words,
                cached_input_tokens=0,
                output_tokens=self._output_words,
                reasoning_output_tokens=0,
                total_tokens=self._input_words + self._output_words,
            )
            await self._context.emit(
                "usage", wire.Usage(tokens=counts, provider="scripted-word-count", model="scripted")
            )
        if failure is not None:
            await self._context.emit(
                "error",
                wire.Error(error=str(failure), code=failure.code, http_status=failure.http_status),
            )

    def _queue(self, text: str) -> None:
        """Add a set of lines; plain text becomes one reply when the set has no `/say`."""
        self._input_words += len(text.split())
        lines = [
            Line("ack", acknowledgement(parsed)) if line.directive == "ack" else line
            for parsed in [parse(text)]
            for line in parsed
        ]
        if not any(line.directive in REPLIES for line in lines):
            plain = "\n".join(line.argument for line in lines if not line.directive)
            lines = [line for line in lines if line.directive]
            lines.append(Line("say", plain))
        self._lines.extend(line for line in lines if line.directive)

    def _take_steered(self) -> None:
        for messages in self._context.take_steered():
            self._queue(text_of(messages))

    def _final(self) -> bool:
        return not any(line.directive in REPLIES for line in self._lines)

    async def _step(self, line: Line) -> None:
        if line.directive == "say":
            await self._reply(self._substitute(line.argument))
        elif line.directive == "ack":
            await self._reply(line.argument)  # quoted peer text: no substitution
        elif line.directive == "stream":
            await self._reply("x" * _int(line.argument, "stream"), max_delta=1)
        else:
            await self._directive(line)

    def _substitute(self, text: str) -> str:
        for name, value in self._values.items():
            text = text.replace("{" + name + "}", value)
        return text

    async def _reply(self, text: str, max_delta: int = DELTA_CHARS) -> None:
        phase: Phase = "final_answer" if self._final() else "commentary"
        native_id = f"scripted_msg_{secrets.token_hex(6)}"
        await self._context.emit(
            "output_message", wire.OutputMessage(id=native_id, status="in_progress", phase=phase)
        )
        for sequence, start in enumerate(range(0, len(text), max_delta), start=1):
            await self._context.emit(
                "delta",
                wire.Delta(
                    item_id=native_id, delta=text[start : start + max_delta], sequence=sequence
                ),
            )
        await self._context.emit(
            "output_message",
            wire.OutputMessage(id=native_id, status="completed", phase=phase, text=text),
        )
        self._output_words += len(text.split())

    async def _directive(self, line: Line) -> None:
        argument = line.argument
        handler = {
            "sleep": self._sleep,
            "hang": self._hang,
            "fail": self._fail,
            "usage": self._usage,
            "think": self._think,
            "command": self._command,
            "exec": self._exec,
            "call": self._call,
            "permission": self._permission,
            "choose": self._choose,
            "write": self._write,
            "read": self._read,
            "subagent": self._subagent,
        }[line.directive]
        await handler(argument)

    async def _sleep(self, argument: str) -> None:
        await asyncio.sleep(_int(argument, "sleep") / 1000)

    async def _hang(self, argument: str) -> None:
        await asyncio.Event().wait()

    async def _fail(self, argument: str) -> None:
        code, _, status = argument.strip().partition(" ")
        raise ScriptedFailure(
            code, f"scripted failure: {code}", _int(status, "fail") if status.strip() else 0
        )

    async def _usage(self, argument: str) -> None:
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
        await self._context.emit(
            "usage", wire.Usage(tokens=counts, provider="scripted", model="scripted")
        )
        self._usage_reported = True

    async def _think(self, argument: str) -> None:
        await self._context.emit(
            "thinking", wire.Thinking(text=argument, item_id=f"scripted_rs_{secrets.token_hex(6)}")
        )

    async def _command(self, argument: str) -> None:
        call_id = f"scripted_cmd_{secrets.token_hex(6)}"
        before = wire.ToolObservation(
            kind="command_execution", status="in_progress", command=argument
        )
        await self._context.emit(
            "tool_call", wire.ToolCall(id=call_id, name="shell", stage="before", observation=before)
        )
        after = wire.ToolObservation(
            kind="command_execution",
            status="completed",
            command=argument,
            exit_code=0,
            output="ok",
            duration_ms=0,
        )
        await self._context.emit(
            "tool_call", wire.ToolCall(id=call_id, name="shell", stage="after", observation=after)
        )

    async def _exec(self, argument: str) -> None:
        """Really run CMD in the workspace (confined, with the session's credential
        variables); `{output}` is its output in a later `/say`."""
        binding = self._binding("exec")
        call_id = f"scripted_exec_{secrets.token_hex(6)}"
        cwd = str(binding.root)
        before = wire.ToolObservation(
            kind="command_execution", status="in_progress", command=argument, cwd=cwd
        )
        await self._context.emit(
            "tool_call", wire.ToolCall(id=call_id, name="shell", stage="before", observation=before)
        )
        runner = CommandRunner(binding.root, self._context.sandbox, self._command_environment)
        started = time.monotonic()
        code, output = await runner.run(argument)
        after = wire.ToolObservation(
            kind="command_execution",
            status="completed" if code == 0 else "failed",
            command=argument,
            cwd=cwd,
            exit_code=code,
            output=output,
            duration_ms=int((time.monotonic() - started) * 1000),
        )
        await self._context.emit(
            "tool_call", wire.ToolCall(id=call_id, name="shell", stage="after", observation=after)
        )
        self._values["output"] = output

    async def _call(self, argument: str) -> None:
        name, _, raw = argument.strip().partition(" ")
        if name not in self._functions:
            raise ScriptedFailure("invalid_request", "/call names an undeclared function")
        try:
            arguments = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise ScriptedFailure("invalid_request", "/call needs a JSON object") from exc
        if not isinstance(arguments, dict):
            raise ScriptedFailure("invalid_request", "/call needs a JSON object")
        call_id = f"call_{secrets.token_hex(8)}"
        outcome = await self._context.call_function(
            call_id,
            name,
            json.dumps(arguments),
            checkpoint=self.cursor({"kind": "call", "id": call_id}),
        )
        self._values["result"] = outcome.text if outcome.success else "error"

    async def _permission(self, argument: str) -> None:
        tool, _, title = argument.strip().partition(" ")
        request_id = f"perm_{secrets.token_hex(8)}"
        approved = await self._context.request_permission(
            request_id,
            tool or "tool",
            title or tool,
            checkpoint=self.cursor({"kind": "permission", "id": request_id}),
        )
        self._values["decision"] = "approved" if approved else "denied"

    async def _choose(self, argument: str) -> None:
        parts = [part.strip() for part in argument.split("|")]
        if len(parts) < 2 or not parts[0]:
            raise ScriptedFailure("invalid_request", "/choose needs a question and options")
        question = ChoiceQuestion(
            id="q1", question=parts[0], options=[ChoiceOption(label=p) for p in parts[1:] if p]
        )
        ask_id = f"ask_{secrets.token_hex(8)}"
        outcome = await self._context.ask_choice(
            ask_id, [question], checkpoint=self.cursor({"kind": "choice", "id": ask_id})
        )
        self._values["choice"] = _choice_text(outcome)

    async def _subagent(self, argument: str) -> None:
        """`/subagent TEXT`: open a subagent whose task is TEXT; it replies with TEXT
        (the scripted harness has no model) and closes. `{subagent}` is its reply."""
        if not subagents.allowed(self._configuration):
            raise ScriptedFailure("invalid_request", "/subagent needs multi_agent enabled")
        task = self._substitute(argument.strip())
        if not task:
            raise ScriptedFailure("invalid_request", "/subagent needs a task")

        async def echo(text: str) -> str:
            return text

        self._values["subagent"] = await subagents.run_subagent(
            self._context,
            parent_turn_id=self._native_turn,
            source_item_id=f"scripted_call_{secrets.token_hex(6)}",
            name=None,
            task=task,
            answer=echo,
        )

    def _binding(self, directive: str) -> Binding:
        root = self._context.workspace
        if root is None:
            raise ScriptedFailure("invalid_request", f"/{directive} needs a local environment")
        return Binding(environment_id="", type="", root=root)

    async def _write(self, argument: str) -> None:
        binding = self._binding("write")
        path, _, text = argument.strip().partition(" ")
        try:
            await asyncio.to_thread(
                replace_file, binding, path, self._substitute(text).encode("utf-8")
            )
        except WorkspaceError as exc:
            raise ScriptedFailure(
                "invalid_request", "/write must stay inside the workspace"
            ) from exc

    async def _read(self, argument: str) -> None:
        binding = self._binding("read")
        try:
            data, _ = await asyncio.to_thread(read_bytes, binding, argument.strip(), READ_BYTES)
        except WorkspaceError as exc:
            raise ScriptedFailure(
                "invalid_request", "/read must stay inside the workspace"
            ) from exc
        self._values["read"] = data.decode("utf-8", "replace")


def _choice_text(outcome: ChoiceOutcome) -> str:
    return "cancelled" if outcome.cancelled else ", ".join(outcome.answers.get("q1", []))


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

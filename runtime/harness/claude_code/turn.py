"""One Claude Code turn: the CLI's messages become frames, its permission prompts become
corebox approvals.

    write the turn's input as a `user` message (with a uuid of its own)
    read until a `result` arrives when every message written has been replayed (the CLI
    replays a user message when it takes it into the conversation; one taken after the
    previous `result` starts another native run, which ends in another `result`):
        stream_event     text blocks -> `output_message` in_progress, `delta`s, and
                         `output_message` completed at the message's end (phase
                         `commentary` when the message asked for tools, else
                         `final_answer`; `incomplete` when cut at max_tokens);
                         thinking blocks -> one `thinking` frame each
        assistant        tool_use blocks -> `tool_call` before; an `error` code is kept
        user             tool_result blocks -> `tool_call` after
        control_request  can_use_tool -> `permission_request`; the answer goes back
        result           usage is added; a failed result fails the turn
    steered input taken at any message is written as a further `user` message; the CLI
    adds it before its next model call, in this native run or in a new one

Events of subagents (`parent_tool_use_id` set) are not mirrored. Usage is one cumulative
`usage` frame at the end. Tool kinds: `Bash` is a `command_execution`, `mcp__<server>__
<tool>` an `mcp_tool_call`, file tools `file_read` / `file_write`, the rest `tool`.
"""

from __future__ import annotations

import logging
import secrets
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from runtime.harness.base import NativeFailure, RunContext
from runtime.harness.claude_code import errors
from runtime.harness.claude_code.process import ClaudeProcess
from runtime.proto import run as wire
from runtime.proto.inputs import InputText, MessageInput

log = logging.getLogger(__name__)

WRITERS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
READERS = frozenset({"Read", "Glob", "Grep", "LS"})
MAX_TITLE = 200


def input_text(messages: MessageInput) -> str:
    return "\n\n".join(
        "\n".join(p.text for p in m.content if isinstance(p, InputText)) for m in messages
    )


@dataclass
class _Block:
    kind: str  # text | thinking
    item_id: str
    parts: list[str] = field(default_factory=list)
    sequence: int = 0


@dataclass
class _Totals:
    input: int = 0
    cached: int = 0
    output: int = 0
    reported: bool = False

    def add(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        cached = _int(usage.get("cache_read_input_tokens"))
        created = _int(usage.get("cache_creation_input_tokens"))
        self.input += _int(usage.get("input_tokens")) + cached + created
        self.cached += cached
        self.output += _int(usage.get("output_tokens"))
        self.reported = True


class ClaudeTurn:
    def __init__(self, process: ClaudeProcess, context: RunContext, model: str) -> None:
        self._process = process
        self._context = context
        self._model = model
        self._blocks: dict[int, _Block] = {}
        self._stop_reason = ""
        self._tools: dict[str, tuple[str, str, wire.ToolObservation]] = {}
        self._error_code: str | None = None
        self._unconsumed: set[str] = set()
        self._settled = False
        self._totals = _Totals()

    async def play(self, messages: MessageInput) -> None:
        await self._send(input_text(messages))
        while not self._settled:
            await self._steer()
            message = await self._process.read()
            if message is None:
                raise NativeFailure("the Claude Code process ended during the turn")
            await self._handle(message)
        if self._totals.reported:
            await self._report_usage()

    async def _send(self, text: str) -> None:
        message_id = str(uuid.uuid4())
        await self._process.send_user(text, message_id)
        self._unconsumed.add(message_id)

    async def _steer(self) -> None:
        for messages in self._context.take_steered():
            await self._send(input_text(messages))

    async def _handle(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "control_request":
            await self._control(message)
            return
        if message.get("parent_tool_use_id"):
            return
        if kind == "stream_event":
            await self._stream(message.get("event") or {})
        elif kind == "assistant":
            await self._assistant(message.get("message") or {}, message.get("error"))
        elif kind == "user" and message.get("isReplay"):
            self._unconsumed.discard(str(message.get("uuid")))
        elif kind == "user":
            await self._results(message.get("message") or {})
        elif kind == "result":
            self._settled = not self._unconsumed
            self._totals.add(message.get("usage"))
            if message.get("is_error"):
                raise errors.classify(
                    message.get("api_error_status"), self._error_code, str(message.get("subtype"))
                )

    async def _stream(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        index = _int(event.get("index"))
        if kind == "message_start":
            self._blocks, self._stop_reason = {}, ""
        elif kind == "content_block_start":
            block_type = (event.get("content_block") or {}).get("type")
            if block_type in ("text", "thinking"):
                prefix = "ccmsg" if block_type == "text" else "ccrs"
                block = _Block(str(block_type), f"{prefix}_{secrets.token_hex(8)}")
                self._blocks[index] = block
                if block.kind == "text":
                    await self._context.emit(
                        "output_message", wire.OutputMessage(id=block.item_id, status="in_progress")
                    )
        elif kind == "content_block_delta":
            await self._delta(index, event.get("delta") or {})
        elif kind == "content_block_stop":
            done = self._blocks.get(index)
            if done is not None and done.kind == "thinking" and done.parts:
                text = "".join(done.parts)
                await self._context.emit("thinking", wire.Thinking(text=text, item_id=done.item_id))
        elif kind == "message_delta":
            self._stop_reason = str((event.get("delta") or {}).get("stop_reason") or "")
        elif kind == "message_stop":
            await self._finish_message()

    async def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self._blocks.get(index)
        if block is None:
            return
        if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
            block.parts.append(delta["text"])
            block.sequence += 1
            await self._context.emit(
                "delta",
                wire.Delta(item_id=block.item_id, delta=delta["text"], sequence=block.sequence),
            )
        elif delta.get("type") == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block.parts.append(delta["thinking"])

    async def _finish_message(self) -> None:
        phase: Literal["commentary", "final_answer"] = (
            "commentary" if self._stop_reason == "tool_use" else "final_answer"
        )
        status: Literal["completed", "incomplete"] = (
            "incomplete" if self._stop_reason == "max_tokens" else "completed"
        )
        for block in self._blocks.values():
            if block.kind == "text":
                await self._context.emit(
                    "output_message",
                    wire.OutputMessage(
                        id=block.item_id, status=status, phase=phase, text="".join(block.parts)
                    ),
                )
        self._blocks = {}

    async def _assistant(self, message: dict[str, Any], error: Any) -> None:
        if isinstance(error, str):
            self._error_code = error
        for block in message.get("content") or []:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            call_id, name = str(block.get("id") or ""), str(block.get("name") or "")
            if not call_id or call_id in self._tools:
                continue
            observation = self._observation(name, block.get("input") or {})
            self._tools[call_id] = (name, observation.kind, observation)
            await self._context.emit(
                "tool_call",
                wire.ToolCall(id=call_id, name=name, stage="before", observation=observation),
            )

    def _observation(self, name: str, arguments: Any) -> wire.ToolObservation:
        arguments = arguments if isinstance(arguments, dict) else {}
        cwd = str(self._context.workspace) if self._context.workspace else None
        if name == "Bash":
            command = str(arguments.get("command") or "")
            return wire.ToolObservation(
                kind="command_execution", status="in_progress", command=command, cwd=cwd
            )
        if name.startswith("mcp__") and name.count("__") >= 2:
            _, server, tool = name.split("__", 2)
            return wire.ToolObservation(
                kind="mcp_tool_call",
                status="in_progress",
                name=tool,
                server=server,
                arguments=arguments,
            )
        kind = "file_write" if name in WRITERS else "file_read" if name in READERS else "tool"
        shown = {"path": arguments["file_path"]} if "file_path" in arguments else None
        return wire.ToolObservation(kind=kind, status="in_progress", name=name, arguments=shown)

    async def _results(self, message: dict[str, Any]) -> None:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            known = self._tools.pop(str(block.get("tool_use_id") or ""), None)
            if known is None:
                continue
            name, _, before = known
            failed = bool(block.get("is_error"))
            output = _text(block.get("content"))
            after = _settled(before, failed, output)
            await self._context.emit(
                "tool_call",
                wire.ToolCall(
                    id=str(block.get("tool_use_id")), name=name, stage="after", observation=after
                ),
            )

    async def _control(self, message: dict[str, Any]) -> None:
        request_id = str(message.get("request_id") or "")
        request = message.get("request") or {}
        if request.get("subtype") != "can_use_tool":
            await self._process.refuse(request_id, "not supported by this client")
            return
        name = str(request.get("tool_name") or "")
        given = request.get("input")
        arguments: dict[str, Any] = given if isinstance(given, dict) else {}
        title, detail = _describe(name, arguments, request.get("description"))
        approved = await self._context.request_permission(
            f"perm_{secrets.token_hex(8)}", name, title, detail
        )
        if approved:
            await self._process.respond(
                request_id, {"behavior": "allow", "updatedInput": arguments}
            )
        else:
            await self._process.respond(
                request_id, {"behavior": "deny", "message": "The user denied this tool use."}
            )

    async def _report_usage(self) -> None:
        totals = self._totals
        counts = wire.TokenCounts(
            input_tokens=totals.input,
            cached_input_tokens=totals.cached,
            output_tokens=totals.output,
            reasoning_output_tokens=0,
            total_tokens=totals.input + totals.output,
        )
        await self._context.emit(
            "usage", wire.Usage(tokens=counts, provider="claude_code", model=self._model)
        )


def _settled(before: wire.ToolObservation, failed: bool, output: str) -> wire.ToolObservation:
    """The `after` observation: the `before` one with its outcome. Only commands carry
    their output (Core shows it); file contents are not copied into frames."""
    status = "failed" if failed else "completed"
    if before.kind == "command_execution":
        return msgspec.structs.replace(before, status=status, output=output)
    return msgspec.structs.replace(before, status=status, error="failed" if failed else None)


def _describe(name: str, arguments: dict[str, Any], description: Any) -> tuple[str, str]:
    """The approval's title and detail: the command or the path, never file content."""
    if name == "Bash":
        return str(arguments.get("command") or name)[:MAX_TITLE], str(description or "")[:MAX_TITLE]
    path = arguments.get("file_path") or arguments.get("path")
    title = f"{name} {path}" if path else name
    return title[:MAX_TITLE], ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0

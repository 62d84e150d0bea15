"""One Codex turn: `turn/start`, then the app-server's notifications and requests mapped
to Run frames until `turn/completed`.

    item/agentMessage/delta             -> output_message in_progress (once), delta
    item/completed agentMessage         -> output_message completed (its phase kept)
    item/completed reasoning            -> thinking (summary, else raw reasoning text)
    item/started|completed commandExecution, fileChange, mcpToolCall
                                        -> tool_call before / after (observation)
    item/commandExecution/requestApproval, item/fileChange/requestApproval
                                        -> permission_request; the answer is the decision
    thread/tokenUsage/updated           -> summed, one `usage` frame at the end
    turn/completed failed               -> NativeFailure classified by errors.py

Steered input is passed on at once with `turn/steer` (the CLI stops the model reply
it is writing and calls the model again with the input); input that arrives as the
native turn ends starts one more native turn within the same Run. Cancellation sends
`turn/interrupt` and waits, bounded, for the turn to settle before re-raising (the
Executor then ends the processes the turn left running). Approval ids are derived from
the Run and the item (`interaction_id`), never the model's call id alone. Requests
the adapter cannot answer (user input, permission profiles, dynamic tools) are declined
with a JSON-RPC error, so the CLI never waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from typing import Any, Literal

from runtime.harness.base import RunContext, Unavailable
from runtime.harness.codex.errors import classify
from runtime.harness.codex.rpc import AppServer, Message, RpcError
from runtime.proto import run as wire
from runtime.proto.inputs import InputImage, InputText, MessageInput

log = logging.getLogger(__name__)

INTERRUPT_TIMEOUT_SECONDS = 5.0  # within the Runtime's settlement timeout, with the stop
METHOD_NOT_FOUND = -32601
TOOL_KINDS = {"commandExecution": "command_execution", "fileChange": "file_write"}
TOOL_KINDS["mcpToolCall"] = "mcp_tool_call"
APPROVALS = {
    "item/commandExecution/requestApproval": "shell",
    "item/fileChange/requestApproval": "apply_patch",
}


def user_input(messages: MessageInput) -> list[dict[str, Any]]:
    """The CLI's `UserInput` list for corebox message input (text and image URLs)."""
    parts: list[dict[str, Any]] = []
    for message in messages:
        for part in message.content:
            if isinstance(part, InputText):
                parts.append({"type": "text", "text": part.text, "text_elements": []})
            elif isinstance(part, InputImage):
                parts.append({"type": "image", "url": part.image_url})
    return parts


class CodexTurn:
    def __init__(
        self,
        server: AppServer,
        thread_id: str,
        run_id: str,
        context: RunContext,
        model: str,
        policy: str,
    ) -> None:
        """`policy` is the tool policy for commands: `ask` asks the user, `allow` and
        `deny` answer the CLI's approval requests without asking."""
        self._server = server
        self._run_id = run_id
        self._policy = policy
        self._thread_id = thread_id
        self._context = context
        self._model = model
        self._turn_id = ""
        self._sequences: dict[str, int] = {}
        self._texts: dict[str, str] = {}  # messages opened and not yet completed
        self._usage = [0, 0, 0, 0, 0]  # input, cached input, output, reasoning, total
        self._counted = False
        self._leftover: list[MessageInput] = []

    async def play(self, messages: MessageInput, options: dict[str, Any]) -> None:
        """Run the turn; steered input the native turn could no longer take (it had
        just ended) starts one more native turn within this Run."""
        waiting = list(messages)
        while waiting:
            self._leftover = []
            await self._native_turn(waiting, options)
            waiting = [message for batch in self._leftover for message in batch]
        if self._counted:
            await self._report_usage()

    async def _native_turn(self, messages: MessageInput, options: dict[str, Any]) -> None:
        started = await self._server.request(
            "turn/start", {"threadId": self._thread_id, "input": user_input(messages), **options}
        )
        self._turn_id = str(started["turn"]["id"])
        try:
            turn = await self._follow()
        except asyncio.CancelledError:
            await self._interrupt()
            await self._cut_short()
            raise
        await self._cut_short()
        if turn.get("status") == "failed":
            raise classify(turn.get("error"))

    async def _follow(self) -> dict[str, Any]:
        """Handle messages until this turn completes; return the completed Turn."""
        steered: asyncio.Task[None] = asyncio.ensure_future(self._context.wait_steered())
        incoming: asyncio.Task[Message | None] = asyncio.ensure_future(self._server.incoming.get())
        try:
            while True:
                await asyncio.wait({steered, incoming}, return_when=asyncio.FIRST_COMPLETED)
                if steered.done():
                    await self._steer()
                    steered = asyncio.ensure_future(self._context.wait_steered())
                if incoming.done():
                    message = incoming.result()
                    if message is None:
                        raise Unavailable("the Codex app-server ended during a turn")
                    turn = await self._handle(message)
                    if turn is not None:
                        return turn
                    incoming = asyncio.ensure_future(self._server.incoming.get())
        finally:
            for task in (steered, incoming):
                task.cancel()

    async def _steer(self) -> None:
        for messages in self._context.take_steered():
            try:
                await self._server.request(
                    "turn/steer",
                    {
                        "threadId": self._thread_id,
                        "input": user_input(messages),
                        "expectedTurnId": self._turn_id,
                    },
                )
            except RpcError:
                log.info("codex turn %s had ended; steered input starts the next", self._turn_id)
                self._leftover.append(messages)

    async def _handle(self, message: Message) -> dict[str, Any] | None:
        method = str(message.get("method") or "")
        params = message.get("params") or {}
        if "id" in message:
            await self._answer(message["id"], method, params)
            return None
        if params.get("turnId", self._turn_id) != self._turn_id:
            return None
        if method == "item/agentMessage/delta":
            await self._delta(str(params["itemId"]), str(params.get("delta") or ""))
        elif method == "item/started":
            await self._item(params.get("item") or {}, "before")
        elif method == "item/completed":
            await self._item(params.get("item") or {}, "after")
        elif method == "thread/tokenUsage/updated":
            self._count((params.get("tokenUsage") or {}).get("last") or {})
        elif method == "turn/completed":
            turn = params.get("turn") or {}
            if turn.get("id") == self._turn_id:
                return dict(turn)
        return None

    async def _answer(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        tool = APPROVALS.get(method)
        if tool is None:
            await self._server.reject(request_id, METHOD_NOT_FOUND, f"{method} is not offered")
            return
        if self._policy != "ask":
            decision = "accept" if self._policy == "allow" else "decline"
            await self._server.respond(request_id, {"decision": decision})
            return
        item_id = str(params.get("itemId") or "")
        approval = str(params.get("approvalId") or "")
        title = str(params.get("command") or params.get("reason") or "apply file changes")
        approved = await self._context.request_permission(
            interaction_id(self._run_id, item_id, approval),
            tool,
            title[:1000],
            str(params.get("cwd") or params.get("grantRoot") or "")[:1000],
        )
        await self._server.respond(request_id, {"decision": "accept" if approved else "decline"})

    async def _cut_short(self) -> None:
        """Messages the CLI abandoned (a steer or an interrupt cut the model off) end
        `incomplete` with the text streamed so far."""
        for item_id, text in list(self._texts.items()):
            await self._context.emit(
                "output_message", wire.OutputMessage(id=item_id, status="incomplete", text=text)
            )
        self._texts.clear()

    async def _delta(self, item_id: str, text: str) -> None:
        await self._open(item_id)
        self._texts[item_id] = self._texts.get(item_id, "") + text
        self._sequences[item_id] += 1
        await self._context.emit(
            "delta", wire.Delta(item_id=item_id, delta=text, sequence=self._sequences[item_id])
        )

    async def _open(self, item_id: str) -> None:
        if item_id not in self._sequences:
            self._sequences[item_id] = 0
            self._texts[item_id] = ""
            await self._context.emit(
                "output_message", wire.OutputMessage(id=item_id, status="in_progress")
            )

    async def _item(self, item: dict[str, Any], stage: Literal["before", "after"]) -> None:
        kind = str(item.get("type") or "")
        item_id = str(item.get("id") or "")
        if kind == "agentMessage" and stage == "after":
            await self._open(item_id)
            self._texts.pop(item_id, None)
            phase = item.get("phase")
            await self._context.emit(
                "output_message",
                wire.OutputMessage(
                    id=item_id,
                    status="completed",
                    phase=phase if phase in ("commentary", "final_answer") else "",
                    text=str(item.get("text") or ""),
                ),
            )
        elif kind == "reasoning" and stage == "after":
            text = "\n".join(item.get("summary") or item.get("content") or [])
            if text:
                await self._context.emit("thinking", wire.Thinking(text=text, item_id=item_id))
        elif kind in TOOL_KINDS:
            await self._context.emit(
                "tool_call",
                wire.ToolCall(
                    id=item_id, name=kind, stage=stage, observation=observation(kind, item)
                ),
            )

    def _count(self, last: dict[str, Any]) -> None:
        keys = (
            "inputTokens",
            "cachedInputTokens",
            "outputTokens",
            "reasoningOutputTokens",
            "totalTokens",
        )
        for index, key in enumerate(keys):
            value = last.get(key)
            self._usage[index] += value if isinstance(value, int) else 0
        self._counted = True

    async def _report_usage(self) -> None:
        counts = wire.TokenCounts(
            input_tokens=self._usage[0],
            cached_input_tokens=self._usage[1],
            output_tokens=self._usage[2],
            reasoning_output_tokens=self._usage[3],
            total_tokens=self._usage[4],
        )
        await self._context.emit(
            "usage", wire.Usage(tokens=counts, provider="codex", model=self._model)
        )

    async def _interrupt(self) -> None:
        """Ask the CLI to stop the turn and wait, bounded, for `turn/completed`;
        approvals still asked meanwhile are cancelled."""
        if not self._server.running:
            return
        with contextlib.suppress(RpcError, Unavailable, TimeoutError):
            async with asyncio.timeout(INTERRUPT_TIMEOUT_SECONDS):
                await self._server.request(
                    "turn/interrupt", {"threadId": self._thread_id, "turnId": self._turn_id}
                )
                while (message := await self._server.incoming.get()) is not None:
                    if "id" in message:
                        await self._server.respond(message["id"], {"decision": "cancel"})
                    elif message.get("method") == "turn/completed":
                        return


def interaction_id(run_id: str, item_id: str, approval: str) -> str:
    """The id of an approval: unique per Run, since the item id is the model's call id,
    which not every model server keeps unique across a conversation."""
    digest = hashlib.sha256("\0".join((run_id, item_id, approval)).encode()).hexdigest()
    return f"codex_{digest[:32]}"


def observation(kind: str, item: dict[str, Any]) -> wire.ToolObservation:
    status = str(item.get("status") or "")
    shown = {"inProgress": "in_progress", "completed": "completed"}.get(status, "failed")
    if kind == "commandExecution":
        return wire.ToolObservation(
            kind="command_execution",
            status=shown,
            name="shell",
            command=str(item.get("command") or ""),
            cwd=item.get("cwd"),
            exit_code=item.get("exitCode"),
            duration_ms=item.get("durationMs"),
            output=item.get("aggregatedOutput"),
        )
    if kind == "mcpToolCall":
        return wire.ToolObservation(
            kind="mcp_tool_call",
            status=shown,
            name=str(item.get("tool") or ""),
            server=str(item.get("server") or ""),
            arguments=item.get("arguments"),
            output=item.get("result"),
            error=item.get("error"),
        )
    paths = [str(change.get("path") or "") for change in item.get("changes") or []]
    return wire.ToolObservation(
        kind="file_write", status=shown, name="apply_patch", arguments={"paths": paths}
    )

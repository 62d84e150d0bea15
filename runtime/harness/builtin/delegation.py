"""`create_subagent`: the tool through which a builtin model delegates a task.

Offered only when Core enabled subagents for the execution (`multi_agent.enabled`). A
call opens a subagent whose task is the call's `task`; the subagent runs its own model
loop (a fresh conversation on the same model and settings, with the agent's
instructions and no tools) and its final text is the tool's result. Each subagent is
reported to Core through `runtime.harness.subagents`, so its turn and items are
readable through `sessions.subagents.*`. At most `max_concurrent_subagents` subagents
run at once (a model that asks for more in one reply waits for a slot).
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from runtime.harness.base import NativeFailure, RunContext
from runtime.harness.builtin.conversation import Conversation
from runtime.harness.builtin.model import ModelProtocol, Settings, TextDone, ToolSpec
from runtime.harness.subagents import run_subagent
from runtime.proto.execution import ExecutionConfiguration
from runtime.proto.inputs import InputText, Message

NAME = "create_subagent"
DEFAULT_CONCURRENCY = 6
SPEC = ToolSpec(
    NAME,
    "Delegate a self-contained task to a subagent. The subagent works on the task on its"
    " own (it has no tools) and its final answer is returned to you.",
    {
        "type": "object",
        "properties": {
            "task": {"type": "string", "description": "What the subagent should do."},
            "name": {"type": "string", "description": "A short name for the subagent."},
        },
        "required": ["task"],
    },
)


class Delegation:
    def __init__(
        self,
        configuration: ExecutionConfiguration,
        protocol: ModelProtocol,
        settings: Settings,
        system_prompt: str,
    ) -> None:
        self._protocol = protocol
        self._settings = settings
        self._system_prompt = system_prompt
        limit = configuration.max_concurrent_subagents or DEFAULT_CONCURRENCY
        self._slots = asyncio.Semaphore(limit)
        self._turn = f"builtin_turn_{secrets.token_hex(6)}"

    async def run(self, arguments: dict[str, Any], call_id: str, context: RunContext) -> str:
        task = arguments.get("task")
        if not isinstance(task, str) or not task.strip():
            return "error: create_subagent needs a non-empty task"
        name = arguments.get("name")
        if not isinstance(name, str) or not name.strip():
            name = None  # Core names it, uniquely within the session
        async with self._slots:
            try:
                return await run_subagent(
                    context,
                    parent_turn_id=self._turn,
                    source_item_id=call_id,
                    name=None if name is None else name.strip()[:64],
                    task=task,
                    answer=self._answer,
                )
            except NativeFailure as exc:
                return f"error: the subagent failed: {exc}"

    async def _answer(self, task: str) -> str:
        """The subagent's own model loop: one model call on a fresh conversation (it has
        no tools, so one call is its whole turn)."""
        conversation = Conversation(system_prompt=self._system_prompt)
        conversation.add_input([Message(content=[InputText(text=task)])])
        stream = self._protocol.stream(
            self._system_prompt, conversation.entries, [], self._settings
        )
        texts = [event.text async for event in stream if isinstance(event, TextDone)]
        return "\n".join(texts)

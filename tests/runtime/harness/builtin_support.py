"""Helpers for driving the builtin harness directly (no Core): a RunContext that records
frames and answers requests from the test, and an execution configuration builder."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from runtime.confinement import Sandbox, probe
from runtime.harness.base import ChoiceOutcome, FunctionOutcome
from runtime.harness.builtin.adapter import BuiltinHarness
from runtime.harness.builtin.executor import BuiltinExecutor
from runtime.proto.execution import (
    AgentOptions,
    ExecutionConfiguration,
    ExecutionControls,
    FunctionTool,
    MCPHTTPServer,
    ModelProvider,
    OutputFormat,
)
from runtime.proto.history import HistoryEntry
from runtime.proto.inputs import InputText, Message, MessageInput
from runtime.proto.interactions import ChoiceQuestion

WEATHER = FunctionTool(
    name="get_weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def text(value: str) -> MessageInput:
    return [Message(content=[InputText(text=value)])]


def configuration(
    base_url: str,
    protocol: str = "chat_completions",
    *,
    functions: list[FunctionTool] | None = None,
    schema: dict[str, Any] | None = None,
    verbosity: str = "medium",
    reasoning_effort: str | None = None,
    mcp: list[MCPHTTPServer] | None = None,
    max_output_tokens: int = 0,
    command_policy: str | None = None,
) -> ExecutionConfiguration:
    return ExecutionConfiguration(
        agent_kind="builtin",
        agent_options=AgentOptions(
            model="test-model",
            system_prompt="Be brief.",
            model_provider=ModelProvider(
                protocol=protocol,  # type: ignore[arg-type]
                base_url=base_url,
                api_key="sk-test-secret",
                max_output_tokens=max_output_tokens,
            ),
            harness_config=(
                {"tool_policy": {"run_command": command_policy}} if command_policy else None
            ),
        ),
        execution_controls=ExecutionControls(
            web_search="disabled",
            text_verbosity=verbosity,  # type: ignore[arg-type]
            disable_programmatic_tool_calling=True,
            output_format=OutputFormat(type="json_schema", schema=schema) if schema else None,
            reasoning_effort=reasoning_effort,  # type: ignore[arg-type]
        ),
        disable_execution_environment=True,
        function_tools=functions or [],
        mcp_http_servers=mcp,
    )


@dataclass
class Recording:
    """A RunContext that records every frame and answers function calls with
    `functions(name, arguments) -> (success, text)`."""

    functions: Callable[[str, str], tuple[bool, str]] = lambda name, args: (True, "ok")
    workspace: Path | None = None
    sandbox: Sandbox = field(default_factory=lambda: Sandbox(probe()))
    approve: bool = False
    history: list[HistoryEntry] | None = None
    permissions: list[tuple[str, str]] = field(default_factory=list)
    steered: list[MessageInput] = field(default_factory=list)
    frames: list[tuple[str, msgspec.Struct]] = field(default_factory=list)
    calls: list[tuple[str, str]] = field(default_factory=list)
    first_delta: asyncio.Event = field(default_factory=asyncio.Event)
    metadata: dict[str, str] = field(default_factory=dict)
    resume_cursor: str = ""  # a checkpoint's cursor to continue from
    checkpoints: list[tuple[str, str]] = field(default_factory=list)  # (boundary, cursor)
    results: dict[str, tuple[bool, str]] = field(default_factory=dict)  # for wait_function
    waited: list[str] = field(default_factory=list)  # permission requests `wait_permission` saw

    async def emit(self, type_: str, payload: msgspec.Struct) -> None:
        self.frames.append((type_, payload))
        if type_ == "delta":
            self.first_delta.set()

    async def checkpoint(self, boundary: str, cursor: str) -> None:
        self.checkpoints.append((boundary, cursor))

    async def call_function(
        self, call_id: str, name: str, arguments: str, checkpoint: str = ""
    ) -> FunctionOutcome:
        self.calls.append((name, arguments))
        if checkpoint:
            self.checkpoints.append(("awaiting_function_result", checkpoint))
        success, output = self.functions(name, arguments)
        return FunctionOutcome(success, [InputText(text=output)])

    async def wait_function(self, call_id: str) -> FunctionOutcome:
        success, output = self.results[call_id]
        return FunctionOutcome(success, [InputText(text=output)])

    async def request_permission(
        self, request_id: str, tool: str, title: str, detail: str = "", checkpoint: str = ""
    ) -> bool:
        self.permissions.append((tool, title))
        if checkpoint:
            self.checkpoints.append(("awaiting_approval", checkpoint))
        return self.approve

    async def wait_permission(self, request_id: str) -> bool:
        self.waited.append(request_id)
        return self.approve

    async def ask_choice(self, ask_id: str, questions: list[ChoiceQuestion]) -> ChoiceOutcome:
        return ChoiceOutcome({}, True)

    def take_steered(self) -> list[MessageInput]:
        taken, self.steered = self.steered, []
        return taken

    async def wait_steered(self) -> None:
        await asyncio.Event().wait()  # steering is given up front (self.steered), never later

    def annotate(self, key: str, value: str) -> None:
        self.metadata[key] = value

    def denial(self, request_id: str) -> str:
        return ""

    def types(self) -> list[str]:
        return [type_ for type_, _ in self.frames]

    def of(self, type_: str) -> list[Any]:
        return [payload for kind, payload in self.frames if kind == type_]


async def executor(cfg: ExecutionConfiguration) -> BuiltinExecutor:
    return await BuiltinHarness(retries=0).create_executor("exec_1", cfg)

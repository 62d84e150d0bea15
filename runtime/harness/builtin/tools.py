"""The tools one builtin turn offers the model, and how each kind runs.

- Public function tools are client-executed: a call becomes `context.call_function`
  (a `function_call` frame; Core shows it as a required action) and the turn waits for
  the result the client sends.
- HTTP MCP tools run here, each use reported as a `tool_call` observation (`before`,
  then `after`) of kind `mcp_tool_call`. A tool of a server that dropped out since an
  earlier turn stays offered and answers `{"error": "unavailable", "server", "tool"}`.
- Workspace tools (read, write, list, run a command) are offered when the Run is bound
  to a workspace (workspace_tools.py); a function tool of the same name wins.
- `create_subagent` is offered when subagents are enabled (delegation.py); a function
  tool of the same name wins.

Tools a safety overlay disables (`harness_config.disabled_tools`: a tool name or an
MCP server label -> the overlay's version) stay offered, so the model's call of one gets
the structured result `{"error": "tool_disabled", "tool", "overlay_version"}` instead of
a vanished tool; the refused call and that result are reported to Core (refusals.py).

`run` never raises for a bad call from the model (unknown tool, arguments that are not a
JSON object, a failing MCP call): it returns text saying what went wrong, so the model
can recover. Cancellation propagates.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

from runtime.harness.base import FunctionOutcome, NativeFailure, RunContext
from runtime.harness.builtin import refusals
from runtime.harness.builtin.delegation import NAME as DELEGATE
from runtime.harness.builtin.delegation import SPEC as DELEGATE_SPEC
from runtime.harness.builtin.delegation import Delegation
from runtime.harness.builtin.mcp_servers import McpServers
from runtime.harness.builtin.model import ToolRequest, ToolSpec
from runtime.harness.builtin.workspace_tools import SPECS as WORKSPACE_SPECS
from runtime.harness.builtin.workspace_tools import WorkspaceTools
from runtime.proto import run as wire
from runtime.proto.execution import FunctionTool

OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def function_output(outcome: FunctionOutcome) -> str:
    """The text the model sees for a client-executed function's outcome."""
    if outcome.success:
        return outcome.text
    return f"error: {outcome.text or 'the function failed'}"


class Toolbox:
    def __init__(
        self,
        functions: list[FunctionTool],
        mcp: McpServers | None = None,
        workspace: WorkspaceTools | None = None,
        delegation: Delegation | None = None,
        disabled: dict[str, int] | None = None,
    ) -> None:
        self._functions = {tool.name: tool for tool in functions}
        self._delegation = delegation if DELEGATE not in self._functions else None
        self._disabled = dict(disabled or {})
        self._mcp = mcp
        self._workspace = workspace
        self._workspace_names = (
            {spec.name for spec in WORKSPACE_SPECS} - set(self._functions) if workspace else set()
        )

    def specs(self) -> list[ToolSpec]:
        specs = [
            ToolSpec(t.name, t.description, t.parameters or OBJECT_SCHEMA)
            for t in self._functions.values()
        ]
        specs += [spec for spec in WORKSPACE_SPECS if spec.name in self._workspace_names]
        taken = set(self._functions) | self._workspace_names
        if self._delegation is not None:
            specs.append(DELEGATE_SPEC)
            taken.add(DELEGATE)
        if self._mcp is not None:
            specs += [tool.spec for name, tool in self._mcp.tools.items() if name not in taken]
        return specs

    async def run(
        self,
        request: ToolRequest,
        context: RunContext,
        waiting: Callable[[str], str] | None = None,
        asking: Callable[[str], str] | None = None,
    ) -> str:
        """Run one tool call and return the text the model sees as its result. While
        a function's result is awaited, the wait is a checkpoint with the cursor
        `waiting(call_id)` gives, and while a workspace command's approval is awaited,
        with the cursor `asking(request_id)` gives (none when they give "")."""
        try:
            arguments = json.loads(request.arguments or "{}")
        except json.JSONDecodeError:
            arguments = None
        if not isinstance(arguments, dict):
            return "error: the arguments must be a JSON object"
        refusal = self._disabled_result(request.name)
        if refusal is not None:
            server = self._mcp_server(request.name)
            await refusals.report(context, request.name, arguments, refusal, server)
            return refusal
        if request.name in self._functions:
            call_id = f"call_{secrets.token_hex(12)}"
            outcome = await context.call_function(
                call_id,
                request.name,
                json.dumps(arguments),
                checkpoint=waiting(call_id) if waiting is not None else "",
            )
            return function_output(outcome)
        if self._workspace is not None and request.name in self._workspace_names:
            return await self._workspace.run(request.name, arguments, context, asking)
        if self._delegation is not None and request.name == DELEGATE:
            return await self._delegation.run(arguments, request.call_id, context)
        if self._mcp is not None and request.name in self._mcp.tools:
            tool = self._mcp.tools[request.name]
            if tool.server in self._mcp.unavailable:
                return json.dumps(
                    {"error": "unavailable", "server": tool.server, "tool": tool.name}
                )
            return await self._mcp_call(request.name, arguments, context)
        return f"error: there is no tool named {request.name[:64]!r}"

    async def resume_command(
        self, request: ToolRequest, request_id: str, context: RunContext
    ) -> str:
        """The result of a workspace command whose approval (`request_id`) a checkpoint
        waited for: the decision, then the command when approved."""
        if self._workspace is None or request.name not in self._workspace_names:
            raise NativeFailure("the checkpoint waits for an approval this turn cannot ask")
        arguments = json.loads(request.arguments or "{}")
        return await self._workspace.resume_command(arguments, request_id, context)

    def _mcp_server(self, name: str) -> str:
        """The label of the MCP server a call of `name` goes to ("" when none does: no
        MCP tool has the name, or another tool took it)."""
        if self._mcp is None or name not in self._mcp.tools:
            return ""
        if name in self._functions or name in self._workspace_names:
            return ""
        if self._delegation is not None and name == DELEGATE:
            return ""
        return self._mcp.tools[name].server

    def _disabled_result(self, name: str) -> str | None:
        version = self._disabled.get(name)
        if version is None and self._mcp is not None and name in self._mcp.tools:
            version = self._disabled.get(self._mcp.tools[name].server)
        if version is None:
            return None
        return json.dumps({"error": "tool_disabled", "tool": name, "overlay_version": version})

    async def _mcp_call(self, name: str, arguments: dict[str, Any], context: RunContext) -> str:
        assert self._mcp is not None
        tool = self._mcp.tools[name]
        call_id = f"mcp_{secrets.token_hex(8)}"
        before = wire.ToolObservation(
            kind="mcp_tool_call",
            status="in_progress",
            name=tool.name,
            server=tool.server,
            arguments=arguments,
        )
        await context.emit(
            "tool_call",
            wire.ToolCall(id=call_id, name=tool.name, stage="before", observation=before),
        )
        outcome = await self._mcp.call(tool, arguments)
        after = wire.ToolObservation(
            kind="mcp_tool_call",
            status="failed" if outcome.error is not None else "completed",
            name=tool.name,
            server=tool.server,
            arguments=arguments,
            output=outcome.output if outcome.error is None else None,
            error=outcome.error,
        )
        await context.emit(
            "tool_call",
            wire.ToolCall(id=call_id, name=tool.name, stage="after", observation=after),
        )
        if outcome.error is not None:
            return f"error: {outcome.error}"
        return outcome.output

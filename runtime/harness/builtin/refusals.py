"""Reporting a tool call the Runtime answered itself with a safety overlay's refusal.

The model sees the call and its `tool_disabled` result like any other, so Core keeps
both in the transcript: one `tool_call` frame (stage `after`) carries the call and its
result. A call of an MCP tool is an observation of kind `mcp_tool_call` (Core shows a
failed `mcp_call` item); any other is of kind `function_call` (Core shows a completed
`function_call` item followed by a failed `function_call_output` whose `error` is the
result).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from runtime.harness.base import RunContext
from runtime.proto import run as wire

FUNCTION_CALL = "function_call"


async def report(
    context: RunContext, name: str, arguments: dict[str, Any], result: str, server: str = ""
) -> None:
    """Emit the refused call of `name` with `arguments` and the `result` the model
    sees; `server` is the MCP server's label when `name` is one of its tools."""
    if server:
        call_id = f"mcp_{secrets.token_hex(8)}"
        observation = wire.ToolObservation(
            kind="mcp_tool_call",
            status="failed",
            name=name,
            server=server,
            arguments=arguments,
            error=result,
        )
    else:
        call_id = f"call_{secrets.token_hex(12)}"
        observation = wire.ToolObservation(
            kind=FUNCTION_CALL,
            status="failed",
            name=name,
            arguments=json.dumps(arguments),
            error=result,
        )
    await context.emit(
        "tool_call", wire.ToolCall(id=call_id, name=name, stage="after", observation=observation)
    )

"""HTTP MCP servers for one turn, through the official `mcp` package's streamable HTTP
client. corebox is the MCP client: each server's tools (limited to `allowed_tools`) are
offered to the model as functions named `<server_label>__<tool>`, and each call's
result content is passed back to the model as text.

Contract: `open()` connects every server and lists its tools. A server that cannot be
reached is skipped with a warning, unless it is `required`, in which case the turn
fails (Unavailable) before the model is called. Connections close when the turn ends,
however it ends. The bearer token goes only into the Authorization header of requests
to its own server; it is never logged.
"""

from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from runtime.harness.base import Unavailable
from runtime.harness.builtin.model import ToolSpec
from runtime.proto.execution import MCPHTTPServer

log = logging.getLogger(__name__)

NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
MAX_NAME = 64
CONNECT_TIMEOUT_SECONDS = 30.0
CALL_TIMEOUT_SECONDS = 300.0


@dataclass(frozen=True)
class McpTool:
    server: str  # server label
    name: str  # the tool's name on its server
    spec: ToolSpec


@dataclass(frozen=True)
class McpOutcome:
    output: str
    error: str | None


def offered_name(label: str, tool: str) -> str:
    """A function name the model may use: `<label>__<tool>`, limited to the characters
    and length function names allow."""
    return NAME_CHARS.sub("_", f"{label}__{tool}")[:MAX_NAME]


class McpServers:
    """`known` holds the tools earlier turns of the session saw: a server that cannot
    be reached now keeps its known tools offered (`unavailable` names it), so the model
    gets a structured `unavailable` result rather than finding the tool gone."""

    def __init__(
        self, servers: list[MCPHTTPServer], known: dict[str, McpTool] | None = None
    ) -> None:
        self._servers = servers
        self._known = dict(known or {})
        self._stack = contextlib.AsyncExitStack()
        self._clients: dict[str, Client] = {}
        self.tools: dict[str, McpTool] = {}  # offered name -> tool
        self.unavailable: set[str] = set()  # labels of servers that could not be reached

    async def open(self) -> None:
        for server in self._servers:
            try:
                client, listed = await self._connect(server)
            except Exception as exc:
                if server.required:
                    raise Unavailable(
                        f"the required MCP server {server.server_label} could not be reached"
                    ) from exc
                log.warning("MCP server %s skipped: %s", server.server_label, type(exc).__name__)
                self.unavailable.add(server.server_label)
                for name, known in self._known.items():
                    if known.server == server.server_label:
                        self.tools[name] = known
                continue
            self._clients[server.server_label] = client
            allowed = None if server.allowed_tools is None else set(server.allowed_tools)
            for tool in listed:
                if allowed is not None and tool.name not in allowed:
                    continue
                name = offered_name(server.server_label, tool.name)
                spec = ToolSpec(name, tool.description or "", dict(tool.input_schema or {}))
                self.tools[name] = McpTool(server.server_label, tool.name, spec)

    async def _connect(self, server: MCPHTTPServer) -> tuple[Client, list[Any]]:
        headers = dict(server.headers)
        if server.bearer_token:
            headers["Authorization"] = f"Bearer {server.bearer_token}"
        async with contextlib.AsyncExitStack() as stack:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=headers,
                    timeout=httpx2.Timeout(CONNECT_TIMEOUT_SECONDS, read=CALL_TIMEOUT_SECONDS),
                )
            )
            client = await stack.enter_async_context(
                Client(streamable_http_client(server.server_url, http_client=http), cache=None)
            )
            listed = await client.list_tools()
            self._stack.push_async_exit(stack.pop_all())
        return client, list(listed.tools)

    async def call(self, tool: McpTool, arguments: dict[str, Any]) -> McpOutcome:
        """Call one tool; a failure of the call or of the tool is an outcome with an
        error, not an exception (the model is told and may try something else)."""
        client = self._clients[tool.server]
        try:
            result = await client.call_tool(tool.name, arguments)
        except Exception as exc:
            log.warning("MCP call %s on %s failed: %s", tool.name, tool.server, type(exc).__name__)
            return McpOutcome("", f"the MCP call failed ({type(exc).__name__})")
        text = "\n".join(_text(part) for part in result.content)
        if result.is_error:
            return McpOutcome("", text or "the tool reported an error")
        return McpOutcome(text, None)

    async def close(self) -> None:
        self._clients.clear()
        await self._stack.aclose()


def _text(part: Any) -> str:
    """A content part as text: text as is, anything else named by its type (the
    matrix labels MCP results as text-only)."""
    text = getattr(part, "text", None)
    if isinstance(text, str):
        return text
    return f"[{getattr(part, 'type', 'content')} omitted]"

"""A loopback HTTP MCP server (the official `mcp` package's MCPServer over streamable
HTTP, served by uvicorn in a thread) that demands a bearer token."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

TOKEN = "mcp-secret-token"


class McpTestServer:
    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.refused = 0
        self.port = 0
        mcp: MCPServer[Any] = MCPServer("corebox-test")

        @mcp.tool()
        def add(a: int, b: int) -> str:
            """Add two whole numbers."""
            self.calls.append(("add", {"a": a, "b": b}))
            return str(a + b)

        @mcp.tool()
        def shout(text: str) -> str:
            """Upper-case a text."""
            self.calls.append(("shout", {"text": text}))
            return text.upper()

        self._app = mcp.streamable_http_app(stateless_http=True, json_response=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def _guarded(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {self.token}".encode():
                self.refused += 1
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
        await self._app(scope, receive, send)

    @contextmanager
    def running(self) -> Iterator[McpTestServer]:
        # The socket listens before uvicorn starts: early connections wait in the
        # backlog, so nobody has to wait for the server to come up.
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self.port = sock.getsockname()[1]
        server = uvicorn.Server(
            # log_config=None: uvicorn leaves the process's logging as it is (its default
            # configuration stops the `uvicorn` loggers propagating, for later tests too).
            uvicorn.Config(self._guarded, log_config=None, lifespan="on", interface="asgi3")
        )
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.should_exit = True
            thread.join(10)
            sock.close()

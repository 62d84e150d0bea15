"""A loopback Anthropic Messages server, for driving the real Claude Code CLI in tests.

`POST /v1/messages` with `stream: true` answers with the Messages streaming events
(`message_start`, `content_block_start`, `content_block_delta` with `text_delta` or
`input_json_delta`, `content_block_stop`, `message_delta`, `message_stop`); without
`stream` it answers one whole message. `POST /v1/messages/count_tokens` answers a count.

Each Messages request takes the next scripted Turn (the CLI, started with its
non-essential traffic turned off, makes no side calls); a request with no Turn left
gets a 500.
A Turn can hang after its first text delta until released or the client goes away, so
tests can steer or cancel while the model is writing. Error turns answer the status
with an Anthropic error body (`{"type": "error", "error": {"type": ...}}`).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HANG_LIMIT_SECONDS = 60.0
_IDS = itertools.count(1)


@dataclass
class Turn:
    """One model reply: text, then tool uses (name, input)."""

    text: str = ""
    tools: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    error_type: str = ""
    hang: bool = False

    @classmethod
    def say(cls, text: str, **kwargs: Any) -> Turn:
        return cls(text=text, **kwargs)

    @classmethod
    def use(cls, name: str, arguments: dict[str, Any], text: str = "", hang: bool = False) -> Turn:
        return cls(text=text, tools=[(name, arguments)], hang=hang)

    @classmethod
    def fail(cls, status: int, error_type: str) -> Turn:
        return cls(status=status, error_type=error_type)


class AnthropicServer:
    def __init__(self) -> None:
        self._turns: deque[Turn] = deque()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []  # every Messages request body
        self.hanging = threading.Event()  # a hanging turn has sent its first delta
        self.release = threading.Event()
        self.left = threading.Event()  # a client went away from a hanging turn
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *turns: Turn) -> None:
        with self._lock:
            self._turns.extend(turns)

    def take(self, body: dict[str, Any]) -> Turn | None:
        with self._lock:
            self.requests.append(body)
            return self._turns.popleft() if self._turns else None

    @contextmanager
    def running(self) -> Iterator[AnthropicServer]:
        owner = self

        class Handler(_Handler):
            server_state = owner

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        self.port = httpd.server_address[1]
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.release.set()
            httpd.shutdown()
            httpd.server_close()
            thread.join()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_state: AnthropicServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "-"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            self._json(200, {"input_tokens": 10})
            return
        if not path.endswith("/v1/messages"):
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "-"}})
            return
        turn = self.server_state.take(body)
        if turn is None:
            self._json(500, {"type": "error", "error": {"type": "api_error", "message": "none"}})
            return
        if turn.status != 200:
            self._json(turn.status, {"type": "error", "error": {"type": turn.error_type}})
            return
        if body.get("stream"):
            self._stream(turn, body)
        else:
            self._json(200, _message(turn, body))

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        if status != 200:
            self.send_header("x-should-retry", "false")
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, turn: Turn, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        state = self.server_state
        try:
            for event in _events(turn, body):
                if event is None:
                    state.hanging.set()
                    if not state.release.wait(HANG_LIMIT_SECONDS):
                        return
                    continue
                self.wfile.write(event)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            state.left.set()


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def _message(turn: Turn, body: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for name, arguments in turn.tools:
        block = {"type": "tool_use", "id": f"toolu_{next(_IDS)}", "name": name}
        content.append(block | {"input": arguments})
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "test-model"),
        "content": content,
        "stop_reason": "tool_use" if turn.tools else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 7},
    }


def _events(turn: Turn, body: dict[str, Any]) -> Iterator[bytes | None]:
    start = _message(turn, body) | {"content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": 12, "output_tokens": 1}
    yield _sse("message_start", {"message": start})
    index = 0
    if turn.text:
        yield _sse(
            "content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}
        )
        pieces = [turn.text[i : i + 4] for i in range(0, len(turn.text), 4)]
        for number, piece in enumerate(pieces):
            delta = {"type": "text_delta", "text": piece}
            yield _sse("content_block_delta", {"index": 0, "delta": delta})
            if number == 0 and turn.hang:
                yield None
        yield _sse("content_block_stop", {"index": 0})
        index = 1
    for name, arguments in turn.tools:
        block = {"type": "tool_use", "id": f"toolu_{next(_IDS)}", "name": name}
        yield _sse("content_block_start", {"index": index, "content_block": block | {"input": {}}})
        delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
        yield _sse("content_block_delta", {"index": index, "delta": delta})
        yield _sse("content_block_stop", {"index": index})
        index += 1
    stop = "tool_use" if turn.tools else "end_turn"
    yield _sse(
        "message_delta",
        {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 7}},
    )
    yield _sse("message_stop", {})

"""A loopback model server of the project's own, for tests and benchmarks.

It speaks the two protocols the `builtin` harness uses, in their real streaming wire
formats (checked against the `openai` package's own types in
tests/support/test_model_server.py):

- `POST /v1/chat/completions` with `stream: true`: `data: <chat.completion.chunk>`
  server-sent events, a final usage chunk with empty `choices` when
  `stream_options.include_usage` is set, then `data: [DONE]`;
- `POST /v1/responses` with `stream: true`: `event: <type>` / `data: <event>` pairs from
  `response.created` to `response.completed` (or `response.incomplete`).

Each request takes the next scripted Reply (what the "model" says); a request with none
left gets a 500. Every request body is recorded for assertions. A Reply can stop
mid-stream and wait (`hang`), so tests can cancel a turn while the model is writing,
and the server records when the client went away. Error replies carry
`x-should-retry: false` so the SDK reports them at once instead of retrying.

A Reply can also misbehave as hostile or broken servers do: never answer (`silent`),
hold its stream open sending only SSE comments (`hang` with `hold="keepalive"`) or the
same event again and again (`hold="drip"`), end its stream early with no terminal event
(`cut`), or answer 200 with a body of its own (`raw`: content type and bytes). Each
wait ends when `release` is set, the client leaves, or after HANG_LIMIT_SECONDS.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "test-model"
HANG_LIMIT_SECONDS = 30.0


@dataclass
class Reply:
    """One model reply. `calls` are (name, arguments) pairs the model asks for."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    reasoning: str = ""
    usage: tuple[int, int] | None = (12, 7)  # (input, output) tokens; None: not reported
    status: int = 200
    error_code: str = ""
    hang: bool = False  # after the first delta, wait until released or the client leaves
    hold: str = "wait"  # what a hang sends meanwhile: wait (nothing) | keepalive | drip
    silent: bool = False  # read the request, then never answer
    cut: bool = False  # end the stream after the text: no finish, usage or end marker
    raw: tuple[str, bytes] | None = None  # answer 200 with this content type and body
    delta_chars: int = 4
    finish: str = "stop"  # stop | length
    call_time: int = 0  # the time its call ids carry (0: the reply's own, as servers do)

    @classmethod
    def say(cls, text: str, **kwargs: Any) -> Reply:
        return cls(text=text, **kwargs)

    @classmethod
    def call(cls, name: str, arguments: dict[str, Any], **kwargs: Any) -> Reply:
        return cls(calls=[(name, arguments)], **kwargs)

    @classmethod
    def fail(cls, status: int, code: str = "") -> Reply:
        return cls(status=status, error_code=code)


@dataclass
class Seen:
    path: str
    body: dict[str, Any]
    authorization: str
    received_at: float  # time.perf_counter() in this process when the body was read


class ModelServer:
    def __init__(self) -> None:
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.requests: list[Seen] = []
        self.hanging = threading.Event()  # a hang reply reached its hang point
        self.release = threading.Event()  # lets a hanging reply finish
        self.client_left = threading.Event()  # a client closed a stream before its end
        self.last_byte_at: list[float] = []  # time.perf_counter() after each complete reply
        self._http: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._http is not None
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def next_reply(self) -> Reply | None:
        with self._lock:
            return self._replies.popleft() if self._replies else None

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.requests.append(seen)

    @contextmanager
    def running(self) -> Iterator[ModelServer]:
        server = self

        class Handler(_Handler):
            model = server

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        thread.start()
        try:
            yield self
        finally:
            self.release.set()
            self._http.shutdown()
            self._http.server_close()
            thread.join(5)


class _Handler(BaseHTTPRequestHandler):
    model: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.model.record(
            Seen(self.path, body, self.headers.get("authorization", ""), time.perf_counter())
        )
        reply = self.model.next_reply()
        if reply is None:
            self._error(500, "server_error", "no scripted reply left")
            return
        if reply.status != 200:
            self._error(reply.status, reply.error_code, "scripted failure")
            return
        if reply.silent:
            self.model.hanging.set()
            self.model.release.wait(HANG_LIMIT_SECONDS)
            self.close_connection = True
            return
        if reply.raw is not None:
            self._raw(*reply.raw)
            return
        if self.path.endswith("/chat/completions"):
            events = chat_events(reply, body)
        elif self.path.endswith("/responses"):
            events = responses_events(reply)
        else:
            self._error(404, "not_found", "unknown path")
            return
        self._stream(events, reply)

    def _error(self, status: int, code: str, message: str) -> None:
        error: dict[str, Any] = {
            "message": message,
            "type": "invalid_request_error" if status < 500 else "server_error",
            "param": None,
            "code": code or None,
        }
        data = json.dumps({"error": error}).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-should-retry", "false")
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def _raw(self, content_type: str, data: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _send_chunk(self, chunk: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.flush()

    def _hold(self, reply: Reply, last: bytes) -> None:
        """The hang point: wait for `release`, meanwhile sending what `reply.hold` says
        (an SSE comment, or the last event again) every 50 ms."""
        self.model.hanging.set()
        if reply.hold == "wait":
            self.model.release.wait(HANG_LIMIT_SECONDS)
            return
        filler = b": keepalive\n\n" if reply.hold == "keepalive" else last
        deadline = time.monotonic() + HANG_LIMIT_SECONDS
        while not self.model.release.wait(0.05) and time.monotonic() < deadline:
            self._send_chunk(filler)

    def _stream(self, events: Iterator[bytes | None], reply: Reply) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        last = b""
        try:
            for chunk in events:
                if chunk is None:  # the hang point
                    self._hold(reply, last)
                    continue
                self._send_chunk(chunk)
                last = chunk
            self.wfile.write(b"0\r\n\r\n")  # the body ends here, before the socket closes
            self.wfile.flush()
            self.model.last_byte_at.append(time.perf_counter())
        except (BrokenPipeError, ConnectionResetError):
            self.model.client_left.set()
        self.close_connection = True


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), max(size, 1))]


# chat/completions ----------------------------------------------------------------


def chat_events(reply: Reply, request: dict[str, Any]) -> Iterator[bytes | None]:
    created = int(time.time())
    base = {
        "id": f"chatcmpl-{created}",
        "object": "chat.completion.chunk",
        "created": created,
        "model": request.get("model", MODEL),
        "system_fingerprint": None,
        "usage": None,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _sse({**base, "choices": [choice]})

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in _pieces(reply.reasoning, reply.delta_chars):
        yield chunk({"reasoning_content": piece})
    for index, piece in enumerate(_pieces(reply.text, reply.delta_chars)):
        yield chunk({"content": piece})
        if index == 0 and reply.hang:
            yield None
    if reply.cut:
        return
    for index, (name, arguments) in enumerate(reply.calls):
        call_id = f"call_{index}_{reply.call_time or created}"
        opening = {"index": index, "id": call_id, "type": "function"}
        yield chunk({"tool_calls": [{**opening, "function": {"name": name, "arguments": ""}}]})
        for piece in _pieces(json.dumps(arguments), 8):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if reply.calls else reply.finish)
    include_usage = (request.get("stream_options") or {}).get("include_usage")
    if include_usage and reply.usage is not None:
        given, made = reply.usage
        usage = {
            "prompt_tokens": given,
            "completion_tokens": made,
            "total_tokens": given + made,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
        yield _sse({**base, "choices": [], "usage": usage})
    yield b"data: [DONE]\n\n"


# responses -----------------------------------------------------------------------


def responses_events(reply: Reply) -> Iterator[bytes | None]:
    created = int(time.time())
    response_id = f"resp_{created}{id(reply) % 100000}"
    sequence = iter(range(1_000_000))
    output: list[dict[str, Any]] = []

    def response(status: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": response_id,
            "object": "response",
            "created_at": created,
            "status": status,
            "model": MODEL,
            "output": list(output),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": {},
            "usage": None,
        }
        return body

    def event(kind: str, **fields: Any) -> bytes:
        return _sse({"type": kind, "sequence_number": next(sequence), **fields}, kind)

    yield event("response.created", response=response("in_progress"))
    yield event("response.in_progress", response=response("in_progress"))
    if reply.reasoning:
        index, item_id = len(output), f"rs_{created}"
        item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": []}
        yield event("response.output_item.added", output_index=index, item=item)
        part = {"type": "summary_text", "text": ""}
        yield event(
            "response.reasoning_summary_part.added",
            item_id=item_id,
            output_index=index,
            summary_index=0,
            part=part,
        )
        for piece in _pieces(reply.reasoning, reply.delta_chars):
            yield event(
                "response.reasoning_summary_text.delta",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                delta=piece,
            )
        done_part = {"type": "summary_text", "text": reply.reasoning}
        yield event(
            "response.reasoning_summary_text.done",
            item_id=item_id,
            output_index=index,
            summary_index=0,
            text=reply.reasoning,
        )
        yield event(
            "response.reasoning_summary_part.done",
            item_id=item_id,
            output_index=index,
            summary_index=0,
            part=done_part,
        )
        item = {**item, "summary": [done_part]}
        output.append(item)
        yield event("response.output_item.done", output_index=index, item=item)
    if reply.text:
        index, item_id = len(output), f"msg_{created}{len(output)}"
        message: dict[str, Any] = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        yield event("response.output_item.added", output_index=index, item=message)
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        yield event(
            "response.content_part.added",
            item_id=item_id,
            output_index=index,
            content_index=0,
            part=empty,
        )
        for number, piece in enumerate(_pieces(reply.text, reply.delta_chars)):
            yield event(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=piece,
                logprobs=[],
            )
            if number == 0 and reply.hang:
                yield None
        if reply.cut:
            return
        yield event(
            "response.output_text.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=reply.text,
            logprobs=[],
        )
        full = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
        yield event(
            "response.content_part.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            part=full,
        )
        status = "incomplete" if reply.finish == "length" else "completed"
        message = {**message, "status": status, "content": [full]}
        output.append(message)
        yield event("response.output_item.done", output_index=index, item=message)
    for number, (name, arguments) in enumerate(reply.calls):
        index, item_id = len(output), f"fc_{created}{number}"
        call: dict[str, Any] = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "call_id": f"call_{number}_{reply.call_time or created}",
            "name": name,
            "arguments": "",
        }
        yield event("response.output_item.added", output_index=index, item=call)
        text = json.dumps(arguments)
        for piece in _pieces(text, 8):
            yield event(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=piece,
            )
        yield event(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            arguments=text,
        )
        call = {**call, "status": "completed", "arguments": text}
        output.append(call)
        yield event("response.output_item.done", output_index=index, item=call)
    final = response("incomplete" if reply.finish == "length" else "completed")
    if reply.usage is not None:
        given, made = reply.usage
        final["usage"] = {
            "input_tokens": given,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": made,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": given + made,
        }
    if reply.finish == "length":
        final["incomplete_details"] = {"reason": "max_output_tokens"}
        yield event("response.incomplete", response=final)
    else:
        yield event("response.completed", response=final)

"""How request bodies are read: bounded in size while they stream in, and in time.

- `limited(request, limit)` gives a view of the request whose body refuses to grow past
  `limit` bytes: a `Content-Length` above it is refused before any byte is read, and a
  body without one (chunked) is refused as soon as the bytes received pass it. Nothing
  beyond `limit` (plus one transport chunk) is ever held in memory. Every way of reading
  the body (`body()`, `stream()`, `form()`) goes through it.
- `read_body(request, limit)` is the whole body as bytes, read through `limited`.
- `BodyDeadline` is a pure ASGI middleware that bounds the wait for each chunk of a
  request body and for the whole body: a client that stops sending, or trickles,
  gets a 408 and its connection is closed, instead of holding a connection and a task
  open forever.

Refusals are `ApiError`s (413 `request_too_large`, 408 `request_timeout`) carrying
`Connection: close`, since the rest of the body is left unread on the socket.
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from allinone.core.api import errors
from allinone.core.api.errors import ApiError

BODY_IDLE_SECONDS = 30.0
BODY_TOTAL_SECONDS = 300.0
CLOSE = {"connection": "close"}


def too_large(limit: int) -> ApiError:
    return errors.too_large(limit, dict(CLOSE))


def _declared_length(request: Request) -> int | None:
    raw = request.headers.get("content-length")
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None  # h11 has already refused a malformed Content-Length


def limited(request: Request, limit: int) -> Request:
    """`request` with a body that may not exceed `limit` bytes (see the module doc)."""
    declared = _declared_length(request)
    if declared is not None and declared > limit:
        raise too_large(limit)
    received = 0
    receive = request.receive

    async def bounded() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise too_large(limit)
        return message

    return Request(request.scope, bounded)


async def read_body(request: Request, limit: int) -> bytes:
    """The request's whole body, refused with a 413 once it passes `limit` bytes."""
    return await limited(request, limit).body()


class BodyDeadline:
    """Each `receive` of an HTTP request body must deliver within `idle_seconds`, and
    the whole body within `total_seconds` of its first read (a client trickling a byte
    now and then is bounded too)."""

    def __init__(
        self,
        app: ASGIApp,
        idle_seconds: float = BODY_IDLE_SECONDS,
        total_seconds: float = BODY_TOTAL_SECONDS,
    ) -> None:
        self.app = app
        self._idle = idle_seconds
        self._total = total_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _bodyless(scope):
            # A request without a body has it whole with its head: the first `receive`
            # answers at once, later ones wait for a disconnect (SSE) with no deadline.
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        body_done = False

        async def receive_in_time() -> Message:
            nonlocal body_done, deadline
            if body_done:
                # After the body, `receive` waits for a disconnect (SSE): no deadline.
                return await receive()
            if deadline is None:
                deadline = loop.time() + self._total
            try:
                async with asyncio.timeout_at(min(deadline, loop.time() + self._idle)):
                    message = await receive()
            except TimeoutError:
                raise errors.body_timeout(dict(CLOSE)) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        await self.app(scope, receive_in_time, send)


def _bodyless(scope: Scope) -> bool:
    """Whether the request head declares no body: no `Transfer-Encoding`, and no
    `Content-Length` or a zero one."""
    for name, value in scope["headers"]:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return False
    return True

"""A pure ASGI middleware that gives every HTTP response an `X-Request-Id: req_<32 hex>`,
with the headers the hosted API sends on each response: `OpenAI-Version` (the API
version its shapes follow), `OpenAI-Processing-Ms` (milliseconds from the request's
head to its response's), `X-Content-Type-Options: nosniff` (a browser never guesses a
type other than the one declared, for the console's pages too), and on a JSON response
`Cache-Control: no-store` unless the handler set its own.

It only adds headers to `http.response.start`, so streaming responses (SSE) pass
through untouched (Starlette's BaseHTTPMiddleware would buffer them). A caller's own
`X-Request-Id` is not echoed. WebSocket and lifespan scopes are passed through.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable
from functools import partial

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from allinone.core.ids import RandomHex

HEADER = b"x-request-id"
PROCESSING = b"openai-processing-ms"
FIXED = ((b"openai-version", b"2020-10-01"), (b"x-content-type-options", b"nosniff"))
_ADDED = frozenset({HEADER, PROCESSING, *(name for name, _ in FIXED)})
_NO_STORE = (b"cache-control", b"no-store")


def new_request_id(token_hex: Callable[[int], str] = secrets.token_hex) -> str:
    return f"req_{token_hex(16)}"


class RequestIds:
    def __init__(self, app: ASGIApp, make_id: Callable[[], str] | None = None) -> None:
        """`make_id` makes each request's id; by default from a `RandomHex` (one read of
        the system's random source per 256 requests, not one per request)."""
        self.app = app
        self._make_id = make_id or partial(new_request_id, RandomHex())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = self._make_id().encode()
        started = time.monotonic()

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = _headers(message.get("headers", []))
                headers.append((HEADER, request_id))
                elapsed = round((time.monotonic() - started) * 1000)
                headers.append((PROCESSING, str(elapsed).encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_id)


def _headers(given: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """A response's own headers without those added here, plus the fixed ones."""
    headers: list[tuple[bytes, bytes]] = []
    json_body = cached = False
    for name, value in given:
        lowered = name.lower()
        if lowered in _ADDED:
            continue
        if lowered == b"content-type" and value.startswith(b"application/json"):
            json_body = True
        elif lowered == b"cache-control":
            cached = True
        headers.append((name, value))
    headers.extend(FIXED)
    if json_body and not cached:
        headers.append(_NO_STORE)
    return headers

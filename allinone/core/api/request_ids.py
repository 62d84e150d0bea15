"""A pure ASGI middleware that gives every HTTP response an `X-Request-Id: req_<32 hex>`,
with the headers the hosted API sends on each response: `OpenAI-Version` (the API
version its shapes follow) and `X-Content-Type-Options: nosniff` (a browser never
guesses a type other than the one declared, for the console's pages too).

It only adds headers to `http.response.start`, so streaming responses (SSE) pass
through untouched (Starlette's BaseHTTPMiddleware would buffer them). A caller's own
`X-Request-Id` is not echoed. WebSocket and lifespan scopes are passed through.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from functools import partial

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from allinone.core.ids import RandomHex

HEADER = b"x-request-id"
FIXED = ((b"openai-version", b"2020-10-01"), (b"x-content-type-options", b"nosniff"))
_ADDED = frozenset({HEADER, *(name for name, _ in FIXED)})


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

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (name, value)
                    for name, value in message.get("headers", [])
                    if name.lower() not in _ADDED
                ]
                headers.append((HEADER, request_id))
                headers.extend(FIXED)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_id)

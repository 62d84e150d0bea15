"""A pure ASGI middleware that bounds a complete request head as the connection
protocols (`protocol`) bound an incomplete one: the protocols refuse a head that grows
past `MAX_HEADER_BYTES` before its end has arrived, but a larger head that arrives whole
in one read is parsed; here it is refused 431 in the API's format and its connection
closed, before any route or key check runs."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from allinone.core.api.errors import error_response, head_too_large
from allinone.core.api.protocol import MAX_HEADER_BYTES

# "METHOD SP target SP HTTP/1.1 CRLF" besides the method and the target, and the blank
# line that ends the head.
_LINE_BYTES = len("  HTTP/1.1\r\n\r\n")
_HEADER_BYTES = len(": \r\n")


def head_bytes(scope: Scope) -> int:
    """The size of the request head `scope` was parsed from, as its client sent it
    (within a few bytes: optional whitespace is not kept by the parsers)."""
    size = _LINE_BYTES + len(scope["method"]) + len(scope.get("raw_path") or b"")
    size += len(scope["query_string"])
    if scope["query_string"]:
        size += 1  # the "?"
    for name, value in scope["headers"]:
        size += len(name) + len(value) + _HEADER_BYTES
    return size


class HeadLimit:
    def __init__(self, app: ASGIApp, limit: int = MAX_HEADER_BYTES) -> None:
        self.app = app
        self._limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and head_bytes(scope) > self._limit:
            await error_response(head_too_large(self._limit))(scope, receive, send)
            return
        await self.app(scope, receive, send)

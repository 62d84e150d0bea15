"""Provider errors -> NativeFailure with an engine failure code (seed 000, native failure
classification). The one place the `openai` package's exceptions are translated.

Classification uses the HTTP status and the provider's error `code`, never the message
text. `connection_failed` is the only code that keeps an HTTP status. The failure's own
message names the status and code but never the provider's message (it may echo the
prompt) nor any request header (it may carry the key).

A 200 answer to a streaming request that is not an event stream, or a stream event that
is not JSON, is the provider's failure to answer: `server_error`, as a 5xx is. A stream
that ends before its terminal event is `stream_ended_early` (unclassified), and a wait
past a bound (timeouts.py) is `request_timeout`.
"""

from __future__ import annotations

from typing import Any

import openai

from runtime.harness.base import NativeFailure
from runtime.proto.errors import EngineFailureCode as Code

# Provider error codes (the `code` of an error body or a stream `error` event).
BY_CODE: dict[str, Code] = {
    "context_length_exceeded": Code.CONTEXT_LENGTH_EXCEEDED,
    "rate_limit_exceeded": Code.RATE_LIMIT_EXCEEDED,
    "insufficient_quota": Code.USAGE_LIMIT_EXCEEDED,
    "usage_limit_exceeded": Code.USAGE_LIMIT_EXCEEDED,
    "server_error": Code.SERVER_ERROR,
    "server_overloaded": Code.SERVER_OVERLOADED,
    "server_is_overloaded": Code.SERVER_OVERLOADED,
    "overloaded": Code.SERVER_OVERLOADED,
    "invalid_api_key": Code.AUTHENTICATION_ERROR,
    "invalid_request_error": Code.INVALID_REQUEST,
    "invalid_prompt": Code.INVALID_REQUEST,
    "model_not_found": Code.RESOURCE_NOT_FOUND,
    "cyber_policy": Code.CYBER_POLICY,
    "request_timeout": Code.REQUEST_TIMEOUT,
}

BY_STATUS: dict[int, Code] = {
    400: Code.INVALID_REQUEST,
    401: Code.AUTHENTICATION_ERROR,
    403: Code.AUTHENTICATION_ERROR,
    404: Code.RESOURCE_NOT_FOUND,
    408: Code.REQUEST_TIMEOUT,
    409: Code.INVALID_REQUEST,
    413: Code.INVALID_REQUEST,
    422: Code.INVALID_REQUEST,
    429: Code.RATE_LIMIT_EXCEEDED,
    500: Code.SERVER_ERROR,
    502: Code.SERVER_ERROR,
    503: Code.SERVER_OVERLOADED,
    504: Code.REQUEST_TIMEOUT,
    529: Code.SERVER_OVERLOADED,
}

# Codes that refine a status: a 400 that says context_length_exceeded, a 429 that says
# insufficient_quota. Other codes do not override what the status says.
REFINING = frozenset({Code.CONTEXT_LENGTH_EXCEEDED, Code.USAGE_LIMIT_EXCEEDED, Code.CYBER_POLICY})


def classify(exc: openai.OpenAIError) -> NativeFailure:
    """The NativeFailure for one exception raised by the `openai` package."""
    if isinstance(exc, openai.APITimeoutError):
        return NativeFailure("the model request timed out", Code.REQUEST_TIMEOUT)
    if isinstance(exc, openai.APIConnectionError):
        return NativeFailure("the model server could not be reached", Code.CONNECTION_FAILED)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        by_code = BY_CODE.get(exc.code or "")
        code = by_code if by_code in REFINING else BY_STATUS.get(status)
        if code is None:
            code = Code.SERVER_ERROR if status >= 500 else by_code
        detail = f"the model server answered HTTP {status}"
        if exc.code:
            detail += f" ({_safe(exc.code)})"
        return NativeFailure(detail, code.value if code else "")
    if isinstance(exc, openai.APIError):
        return stream_error(exc.code or "")
    return NativeFailure(f"the model call failed ({type(exc).__name__})")


def stream_error(code: str) -> NativeFailure:
    """A failure reported inside a stream (an `error` event or a failed response)."""
    classified = BY_CODE.get(code)
    detail = "the model stream reported an error"
    if code:
        detail += f" ({_safe(code)})"
    return NativeFailure(detail, classified.value if classified else "")


def require_event_stream(response: Any) -> None:
    """Raise unless a streaming request's 200 answer is an event stream: a server (or a
    proxy before it) that answered with a page or a JSON body did not give the reply
    asked for, whatever its status says."""
    content_type = str(response.headers.get("content-type", ""))
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind != "text/event-stream":
        shown = "".join(ch for ch in kind[:64] if ch.isalnum() or ch in "_-.+/") or "no body type"
        raise NativeFailure(
            f"the model server answered with {shown}, not an event stream",
            Code.SERVER_ERROR.value,
        )


def unreadable() -> NativeFailure:
    """The model server's stream carried an event that is not JSON."""
    return NativeFailure("the model server's stream could not be read", Code.SERVER_ERROR.value)


def _safe(code: str) -> str:
    """An error code for a message: short, and only the characters codes are made of."""
    return "".join(ch for ch in code[:64] if ch.isalnum() or ch in "_-.")

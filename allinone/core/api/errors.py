"""The API's error format and the one place that turns domain errors into responses.

Body: `{"error": {"message", "type", "param", "code"}}`. The type follows the status:
`server_error` for 5xx, `conflict_error` for 409, `not_found_error` for 404,
`invalid_beta` for that code, `authentication_error`... otherwise `invalid_request_error`.
No credential, prompt or stack trace ever appears in an error body.

The domain raises the Core tree (`allinone.core.errors`); `to_api_error` is the one
mapping from it to this format, registered once as the app's handler for `Refused`.
`ApiError` itself is built only in this module: one function per kind of refusal that
belongs to HTTP alone (a body too large or too slow, an unknown route, a bad JSON body).
"""

from __future__ import annotations

import logging
import re
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from allinone.core.api.expected import accepted, listed, misplaced_field, nearest_field
from allinone.core.errors import InvalidRequest, NotFound, Refused
from storage.errors import StorageUnavailable

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 2


class ApiError(Exception):
    """An error the API reports to the caller as-is."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        type_: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.type = type_ or _type_for(status, code)
        self.headers = headers or {}


def _type_for(status: int, code: str | None) -> str:
    if status >= 500:
        return "server_error"
    if status == 409:
        return "conflict_error"
    if status == 404:
        return "not_found_error"
    if code == "invalid_beta":
        return "invalid_beta"
    return "invalid_request_error"


def not_found() -> NotFound:
    return NotFound()


def invalid(message: str, param: str | None = None, code: str | None = None) -> InvalidRequest:
    return InvalidRequest(message, param, code=code)


def to_api_error(exc: Refused) -> ApiError:
    """The one mapping from the Core tree to the API's error: the status, code and param
    the domain chose, `x-should-retry: false` where retrying cannot help, and the bearer
    challenge on a 401."""
    headers: dict[str, str] = {}
    if exc.should_retry is False:
        headers["x-should-retry"] = "false"
    if exc.challenge:
        headers["www-authenticate"] = "Bearer"
    return ApiError(exc.status, exc.message, code=exc.code, param=exc.param, headers=headers)


def recoded(error: ApiError, code: str) -> ApiError:
    """`error` with another `code` (protocol 1.4 answers with its upper-case codes)."""
    return ApiError(
        error.status, error.message, code=code, param=error.param, headers=error.headers
    )


def not_json() -> ApiError:
    return ApiError(400, "The request body is not valid JSON.", code="invalid_json")


def too_large(limit: int, headers: dict[str, str]) -> ApiError:
    return ApiError(
        413,
        f"The request body is too large (at most {limit} bytes).",
        code="request_too_large",
        headers=headers,
    )


def head_too_large(limit: int) -> ApiError:
    return ApiError(
        431,
        f"The request's head (its line and headers) is too large (at most {limit} bytes).",
        code="request_header_fields_too_large",
        headers={"connection": "close"},
    )


def body_timeout(headers: dict[str, str]) -> ApiError:
    return ApiError(
        408, "The request body was not received in time.", code="request_timeout", headers=headers
    )


def unknown_route(method: str, path: str) -> ApiError:
    return ApiError(404, f"Unknown route {method} {path[:200]}.", code="unsupported_operation")


def method_not_allowed(method: str, headers: dict[str, str]) -> ApiError:
    return ApiError(
        405,
        f"Method {method} is not allowed here.",
        code="unsupported_operation",
        headers=headers,
    )


def http_error(status: int, detail: str) -> ApiError:
    return ApiError(status, detail)


# "- at `$.a.b`", or "- at `key` in `$.a.b`" for a bad key of a mapping.
_MISSING = re.compile(r"^Object missing required field `([^`]+)`$")
_UNKNOWN = re.compile(r"^Object contains unknown field `([^`]{1,64})`$")
_REFUSED = re.compile(r"^Invalid (?:enum )?value ")
_PATH = re.compile(r" - at (?:`key` in )?`\$\.?([^`]*)`$")


def from_validation(
    exc: msgspec.ValidationError | msgspec.DecodeError, type_: Any = None, body: Any = None
) -> ApiError:
    """Translate a msgspec error into a 400 naming the offending parameter. Knowing
    `type_` (what the body was decoded as), it adds the values accepted there when they
    are a few, or what an unknown field stands for (`_field_hint`); knowing `body` (the
    refused JSON), it reads a tagged union as the member the body names."""
    text = str(exc)
    match = _PATH.search(text)
    param = None
    if match:
        param = match.group(1) or None  # a JSON path such as `tools[0].type`
        text = text[: match.start()]
    if isinstance(exc, msgspec.DecodeError) and not isinstance(exc, msgspec.ValidationError):
        return not_json()
    unknown = _UNKNOWN.match(text)
    if unknown and type_ is not None:
        text += _field_hint(type_, param or "", unknown.group(1), body)
    named = _MISSING.match(text) or unknown
    if named:  # the param is the missing or unknown field, not the object around it
        param = f"{param}.{named.group(1)}" if param else named.group(1)
    elif _REFUSED.match(text) and type_ is not None and param is not None:
        values = accepted(type_, param, body)
        if values:
            text = f"{text}; {param} must be {listed(values)}"
    ending = "" if text.endswith("?") else "."
    return ApiError(400, f"Invalid request: {text}{ending}", param=param)


def _field_hint(type_: Any, at: str, name: str, body: Any) -> str:
    """What to add to the refusal of the unknown field `name` of the object at `at`: the
    level it belongs to when it is a field one level up, else the known field it is a
    guess at, else nothing."""
    beside = misplaced_field(type_, at, name, body)
    if beside:
        return f"; `{name}` belongs one level up, beside `{beside}`"
    near = nearest_field(type_, at, name, body)
    return f"; did you mean `{near}`?" if near else ""


def error_response(error: ApiError) -> Response:
    body = {
        "error": {
            "message": error.message,
            "type": error.type,
            "param": error.param,
            "code": error.code,
        }
    }
    headers = error.headers
    if error.status >= 500 and error.status != 503 and "connection" not in headers:
        # After a server error the connection's state is unknown: close it cleanly. A
        # 503 (a retryable storage fault) keeps it for the retry.
        headers = {**headers, "connection": "close"}
    return JSONResponse(body, status_code=error.status, headers=headers)


async def handle_api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc)


def storage_unavailable() -> ApiError:
    """A disk or file fault of the store: retryable (the SDK retries a 503 and honours
    `Retry-After`); the request changed nothing."""
    return ApiError(
        503,
        "The server's storage cannot take writes right now; retry later.",
        code="storage_unavailable",
        headers={"retry-after": str(RETRY_AFTER_SECONDS)},
    )


async def handle_refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    return error_response(to_api_error(exc))


async def handle_storage_unavailable(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StorageUnavailable)
    log.warning("storage unavailable (%s) on %s %s", exc.reason, request.method, request.url.path)
    return error_response(storage_unavailable())


async def handle_unstorable(request: Request, exc: Exception) -> Response:
    """A value the storage backend cannot hold (PostgreSQL keeps no U+0000 in text)."""
    return error_response(
        ApiError(400, "Text may not contain the character U+0000.", code="invalid_value")
    )


async def handle_unexpected(request: Request, exc: Exception) -> Response:
    log.error(
        "unhandled error on %s %s: %s",
        request.method,
        request.url.path,
        type(exc).__name__,
        exc_info=exc,
    )
    return error_response(
        ApiError(500, "The server had an error processing the request.", code="internal_error")
    )

"""Claude Code failures -> NativeFailure with an engine failure code (seed 000, native
failure classification).

The CLI reports a failed model call in two structured places: the `result` message's
`api_error_status` (the HTTP status of the Messages API answer) and the assistant
message's `error` (a short code such as `rate_limit`). Classification uses those two
values only, never the text of `result` or of an error message (which may quote the
prompt). A failure without either is a native failure with no engine code.
"""

from __future__ import annotations

from typing import Any

from runtime.harness.base import NativeFailure
from runtime.proto.errors import EngineFailureCode as Code

BY_STATUS: dict[int, Code] = {
    400: Code.INVALID_REQUEST,
    401: Code.AUTHENTICATION_ERROR,
    403: Code.AUTHENTICATION_ERROR,
    404: Code.RESOURCE_NOT_FOUND,
    408: Code.REQUEST_TIMEOUT,
    409: Code.INVALID_REQUEST,
    413: Code.CONTEXT_LENGTH_EXCEEDED,
    422: Code.INVALID_REQUEST,
    429: Code.RATE_LIMIT_EXCEEDED,
    500: Code.SERVER_ERROR,
    502: Code.SERVER_ERROR,
    503: Code.SERVER_OVERLOADED,
    504: Code.REQUEST_TIMEOUT,
    529: Code.SERVER_OVERLOADED,
}

# The assistant message's `error` codes (Claude Code's SDKAssistantMessageError).
BY_CODE: dict[str, Code] = {
    "authentication_failed": Code.AUTHENTICATION_ERROR,
    "billing_error": Code.USAGE_LIMIT_EXCEEDED,
    "rate_limit": Code.RATE_LIMIT_EXCEEDED,
    "invalid_request": Code.INVALID_REQUEST,
    "server_error": Code.SERVER_ERROR,
    "max_output_tokens": Code.CONTEXT_LENGTH_EXCEEDED,
}

# Codes that say more than a status: a 400 that is really a billing refusal.
REFINING = frozenset({Code.USAGE_LIMIT_EXCEEDED, Code.CONTEXT_LENGTH_EXCEEDED})


def classify(status: Any, code: Any, subtype: str = "") -> NativeFailure:
    """The failure of a turn whose `result` said `is_error`; `status` is its
    `api_error_status`, `code` the last assistant `error` seen in the turn."""
    http = status if isinstance(status, int) and not isinstance(status, bool) else 0
    by_code = BY_CODE.get(code) if isinstance(code, str) else None
    engine = by_code if by_code in REFINING else BY_STATUS.get(http)
    if engine is None:
        engine = Code.SERVER_ERROR if http >= 500 else by_code
    detail = "Claude Code reported a failed turn"
    if http:
        detail += f": the model server answered HTTP {http}"
    elif subtype:
        detail += f" ({_safe(subtype)})"
    return NativeFailure(detail, engine.value if engine else "")


def _safe(value: str) -> str:
    return "".join(ch for ch in value[:64] if ch.isalnum() or ch in "_-.")

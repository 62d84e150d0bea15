"""A failed Codex turn -> NativeFailure with an engine failure code (seed 000, native
failure classification): the one place the CLI's `codexErrorInfo` is read.

Classification uses the error variant and, for the HTTP variants, the upstream status
the CLI forwards (`httpStatusCode`); never the error's message, which may echo a prompt.
Only `connection_failed` keeps an HTTP status.
"""

from __future__ import annotations

from typing import Any

from runtime.harness.base import NativeFailure
from runtime.proto.errors import EngineFailureCode as Code

BY_VARIANT: dict[str, Code] = {
    "contextWindowExceeded": Code.CONTEXT_LENGTH_EXCEEDED,
    "sessionBudgetExceeded": Code.USAGE_LIMIT_EXCEEDED,
    "usageLimitExceeded": Code.USAGE_LIMIT_EXCEEDED,
    "rateLimitExceeded": Code.RATE_LIMIT_EXCEEDED,
    "flexUnavailable": Code.SERVER_OVERLOADED,
    "serverOverloaded": Code.SERVER_OVERLOADED,
    "policyCapacityUnavailable": Code.SERVER_OVERLOADED,
    "modelNotFound": Code.RESOURCE_NOT_FOUND,
    "cyberPolicy": Code.CYBER_POLICY,
    "internalServerError": Code.SERVER_ERROR,
    "unauthorized": Code.AUTHENTICATION_ERROR,
    "badRequest": Code.INVALID_REQUEST,
}

# Variants that carry the upstream status of a failed model request.
HTTP_VARIANTS = frozenset(
    {
        "httpConnectionFailed",
        "responseStreamConnectionFailed",
        "responseStreamDisconnected",
        "responseTooManyFailedAttempts",
    }
)

BY_STATUS: dict[int, Code] = {
    400: Code.INVALID_REQUEST,
    401: Code.AUTHENTICATION_ERROR,
    403: Code.AUTHENTICATION_ERROR,
    404: Code.RESOURCE_NOT_FOUND,
    408: Code.REQUEST_TIMEOUT,
    413: Code.INVALID_REQUEST,
    422: Code.INVALID_REQUEST,
    429: Code.RATE_LIMIT_EXCEEDED,
    503: Code.SERVER_OVERLOADED,
    504: Code.REQUEST_TIMEOUT,
    529: Code.SERVER_OVERLOADED,
}


def classify(error: Any) -> NativeFailure:
    """The NativeFailure for a turn's `error` object (TurnError) or None."""
    info = error.get("codexErrorInfo") if isinstance(error, dict) else None
    if isinstance(info, str):
        code = BY_VARIANT.get(info)
        return NativeFailure(f"the Codex turn failed ({_safe(info)})", code.value if code else "")
    if isinstance(info, dict) and len(info) == 1:
        variant, detail = next(iter(info.items()))
        if variant in HTTP_VARIANTS:
            status = detail.get("httpStatusCode") if isinstance(detail, dict) else None
            return _http(variant, status if isinstance(status, int) else None)
        return NativeFailure(f"the Codex turn failed ({_safe(str(variant))})")
    return NativeFailure("the Codex turn failed")


def _http(variant: str, status: int | None) -> NativeFailure:
    text = f"the Codex turn failed ({variant}"
    if status is None:
        return NativeFailure(text + ")", Code.CONNECTION_FAILED.value)
    text += f", HTTP {status})"
    code = BY_STATUS.get(status)
    if code is None and status >= 500:
        code = Code.SERVER_ERROR
    if code is None:
        return NativeFailure(text, Code.CONNECTION_FAILED.value, http_status=status)
    return NativeFailure(text, code.value)


def _safe(name: str) -> str:
    return "".join(ch for ch in name[:64] if ch.isalnum() or ch in "_-.")

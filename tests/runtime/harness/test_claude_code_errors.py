"""Claude Code failures are classified from `api_error_status` and the assistant
message's `error` code, never from text (seed 000)."""

from __future__ import annotations

import pytest

from runtime.harness.claude_code import errors


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [
        (529, None, "server_overloaded"),
        (503, "server_error", "server_overloaded"),
        (500, None, "server_error"),
        (599, None, "server_error"),
        (400, "billing_error", "usage_limit_exceeded"),
        (429, "billing_error", "usage_limit_exceeded"),
        (400, "rate_limit", "invalid_request"),
        (None, "rate_limit", "rate_limit_exceeded"),
        (None, "authentication_failed", "authentication_error"),
        (None, None, ""),
        (True, "unknown", ""),
    ],
)
def test_classification_uses_status_and_code_only(status: object, error: object, code: str) -> None:
    failure = errors.classify(status, error, "error_during_execution quoted")
    assert failure.engine_code == code
    assert " quoted" not in str(failure)  # only the characters codes are made of

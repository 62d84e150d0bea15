"""Suspension fencing: quiesce/resume requests and their echoing replies."""

import pytest

from runtime.proto.errors import ValidationError
from runtime.proto.suspension import (
    EnvironmentQuiesce,
    EnvironmentQuiesced,
    EnvironmentResume,
    EnvironmentResumed,
    same_suspension,
)

QUIESCE = EnvironmentQuiesce("env", "suspend-1")
RESUME = EnvironmentResume("env", "suspend-1", rollback=True)


def test_valid_requests_and_ownership() -> None:
    QUIESCE.validate()
    RESUME.validate()
    EnvironmentQuiesce("e" * 128, "s" * 128).validate()
    assert same_suspension(QUIESCE, RESUME)
    assert not same_suspension(QUIESCE, EnvironmentResume("env", "suspend-2"))


@pytest.mark.parametrize(
    "request_",
    [
        EnvironmentQuiesce("env", "suspend-1", rollback=True),
        EnvironmentQuiesce("", "suspend-1"),
        EnvironmentQuiesce("env", ""),
        EnvironmentQuiesce("env", "s" * 129),
        EnvironmentResume("e" * 129, "suspend-1"),
    ],
)
def test_invalid_requests(request_: EnvironmentQuiesce | EnvironmentResume) -> None:
    with pytest.raises(ValidationError) as caught:
        request_.validate()
    assert caught.value.code == "invalid_request"


def test_replies_echo_the_suspension_and_carry_finite_codes() -> None:
    EnvironmentQuiesced("env", "suspend-1", True).check(QUIESCE)
    EnvironmentQuiesced("env", "suspend-1", False, "resource_busy").check(QUIESCE)
    EnvironmentResumed("env", "suspend-1", False, "not_suspended").check(RESUME)
    for quiesced in [
        EnvironmentQuiesced("env", "suspend-2", True),
        EnvironmentQuiesced("other", "suspend-1", True),
        EnvironmentQuiesced("env", "suspend-1", True, "resource_busy"),
        EnvironmentQuiesced("env", "suspend-1", False),
        EnvironmentQuiesced("env", "suspend-1", False, "not_suspended"),
    ]:
        with pytest.raises(ValidationError):
            quiesced.check(QUIESCE)
    with pytest.raises(ValidationError):
        EnvironmentResumed("env", "suspend-1", False, "resource_busy").check(RESUME)

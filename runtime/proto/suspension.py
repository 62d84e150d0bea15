"""Suspension fencing: `environment_quiesce` / `environment_resume` (Core -> Runtime) and
their replies `environment_quiesced` / `environment_resumed`.

The envelope id correlates one request (1..128 bytes); `suspend_id` fences one durable
suspension attempt across connections. A quiesce closes admission for the Environment
once it is idle (`resource_busy` otherwise); `rollback` is only for a resume, where it
allows a no-op resume of a still-running source after an uncertain quiesce. A reply
echoes the Environment and suspension ids; `error_code` never accompanies acceptance.
"""

from __future__ import annotations

import msgspec

from runtime.proto.errors import DecodeErrorCode, SuspensionErrorCode, ValidationError
from runtime.proto.identities import utf8_size
from runtime.proto.limits import MAX_CORRELATION_ID_BYTES
from runtime.proto.strictness import LENIENT, STRICT

_STRICT = STRICT
_OUT = LENIENT

QUIESCE_CODES = frozenset({SuspensionErrorCode.INVALID_REQUEST, SuspensionErrorCode.RESOURCE_BUSY})
RESUME_CODES = frozenset({SuspensionErrorCode.INVALID_REQUEST, SuspensionErrorCode.NOT_SUSPENDED})


def _bounded_id(value: str) -> bool:
    size = utf8_size(value)
    return size is not None and 0 < size <= MAX_CORRELATION_ID_BYTES


class EnvironmentQuiesce(msgspec.Struct, **_STRICT):
    environment_id: str
    suspend_id: str
    rollback: bool = False

    def validate(self) -> None:
        if not (_bounded_id(self.environment_id) and _bounded_id(self.suspend_id)):
            raise ValidationError(SuspensionErrorCode.INVALID_REQUEST, "suspension ids invalid")
        if self.rollback:
            raise ValidationError(SuspensionErrorCode.INVALID_REQUEST, "quiesce cannot roll back")


class EnvironmentResume(msgspec.Struct, **_STRICT):
    environment_id: str
    suspend_id: str
    rollback: bool = False

    def validate(self) -> None:
        if not (_bounded_id(self.environment_id) and _bounded_id(self.suspend_id)):
            raise ValidationError(SuspensionErrorCode.INVALID_REQUEST, "suspension ids invalid")


def same_suspension(
    left: EnvironmentQuiesce | EnvironmentResume, right: EnvironmentQuiesce | EnvironmentResume
) -> bool:
    """Compare ownership (Environment and suspension ids), independent of `rollback`."""
    return (left.environment_id, left.suspend_id) == (right.environment_id, right.suspend_id)


class EnvironmentQuiesced(msgspec.Struct, **_OUT):
    environment_id: str
    suspend_id: str
    accepted: bool  # always emitted
    error_code: str = ""

    def check(self, request: EnvironmentQuiesce) -> None:
        _check_reply(self, request, QUIESCE_CODES)


class EnvironmentResumed(msgspec.Struct, **_OUT):
    environment_id: str
    suspend_id: str
    accepted: bool  # always emitted
    error_code: str = ""

    def check(self, request: EnvironmentResume) -> None:
        _check_reply(self, request, RESUME_CODES)


def _check_reply(
    reply: EnvironmentQuiesced | EnvironmentResumed,
    request: EnvironmentQuiesce | EnvironmentResume,
    codes: frozenset[SuspensionErrorCode],
) -> None:
    """The reply echoes the request's ids; acceptance carries no code, refusal one of
    `codes`. Raises ValidationError(`invalid_receipt`)."""
    echoed = (reply.environment_id, reply.suspend_id) == (
        request.environment_id,
        request.suspend_id,
    )
    coded = not reply.error_code if reply.accepted else reply.error_code in codes
    if not (echoed and coded):
        raise ValidationError(DecodeErrorCode.INVALID_RECEIPT, "suspension reply is invalid")

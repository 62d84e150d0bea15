"""Suspension fencing per Environment: `environment_quiesce` and `environment_resume`.

A quiesce succeeds only when nothing of the Environment is in flight (no Run, read-only
preparation, transfer or export); then its idle Executors are closed and, until the
matching resume, every new preparation or workspace operation for it is refused with
`resource_unavailable`. Other Environments keep running. Resuming an Environment that was
never quiesced is a no-op; resuming with another suspension id is `not_suspended`. At
most MAX_OUTSTANDING_SUSPENSIONS Environments are quiesced at once; a further quiesce is
`resource_busy`.
"""

from __future__ import annotations

from collections.abc import Callable

from runtime.proto.errors import SuspensionErrorCode, ValidationError
from runtime.proto.limits import MAX_OUTSTANDING_SUSPENSIONS
from runtime.proto.suspension import (
    EnvironmentQuiesce,
    EnvironmentQuiesced,
    EnvironmentResume,
    EnvironmentResumed,
)


class Suspensions:
    def __init__(self) -> None:
        self._quiesced: dict[str, str] = {}  # environment id -> suspend id

    def is_quiesced(self, environment_id: str) -> bool:
        return environment_id in self._quiesced

    def quiesce(
        self, request: EnvironmentQuiesce, busy: Callable[[str], bool]
    ) -> EnvironmentQuiesced:
        def reply(code: str = "") -> EnvironmentQuiesced:
            return EnvironmentQuiesced(
                environment_id=request.environment_id,
                suspend_id=request.suspend_id,
                accepted=not code,
                error_code=code,
            )

        try:
            request.validate()
        except ValidationError:
            return reply(SuspensionErrorCode.INVALID_REQUEST)
        current = self._quiesced.get(request.environment_id)
        if current is not None:
            return reply("" if current == request.suspend_id else SuspensionErrorCode.RESOURCE_BUSY)
        if busy(request.environment_id) or len(self._quiesced) >= MAX_OUTSTANDING_SUSPENSIONS:
            return reply(SuspensionErrorCode.RESOURCE_BUSY)
        self._quiesced[request.environment_id] = request.suspend_id
        return reply()

    def resume(self, request: EnvironmentResume) -> EnvironmentResumed:
        def reply(code: str = "") -> EnvironmentResumed:
            return EnvironmentResumed(
                environment_id=request.environment_id,
                suspend_id=request.suspend_id,
                accepted=not code,
                error_code=code,
            )

        try:
            request.validate()
        except ValidationError:
            return reply(SuspensionErrorCode.INVALID_REQUEST)
        current = self._quiesced.get(request.environment_id)
        if current is None:
            return reply()
        if current != request.suspend_id:
            return reply(SuspensionErrorCode.NOT_SUSPENDED)
        del self._quiesced[request.environment_id]
        return reply()

"""Connection-local admission handles (seed 000, preparation and execution order).

A handle reserves admission for one turn on an Executor. Its revision orders status
observations; `expires_at` is fixed when granted and never extended by retries. At most
`MAX_ADMISSION_RECORDS` are kept: expired and settled records are pruned first. Records
belong to one connection; they are never durable input replay.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import msgspec

from runtime.proto import limits
from runtime.proto.execution import (
    ExecutionConfiguration,
    PreparationState,
    PreparationStatus,
    check_preparation_transition,
)

_encoder = msgspec.json.Encoder(order="sorted")


def fingerprint(value: msgspec.Struct) -> str:
    return hashlib.sha256(_encoder.encode(value)).hexdigest()


@dataclass
class AdmissionRecord:
    request_id: str
    handle: str
    session_id: str
    configuration: ExecutionConfiguration
    prepare_fingerprint: str
    state: PreparationState = PreparationState.PREPARING
    revision: int = 0
    executor_id: str = ""
    reused: bool = False
    expires_at_ms: int = 0
    run_id: str = ""
    start_fingerprint: str = ""
    error_code: str = ""
    read_only: bool = False

    def advance(self, state: PreparationState, error_code: str = "") -> PreparationStatus:
        """Move to `state` (a legal transition) and return the status to publish."""
        if self.revision:
            check_preparation_transition(self.state, state)
        self.state = state
        self.revision += 1
        self.error_code = error_code
        return self.status()

    def status(self) -> PreparationStatus:
        return PreparationStatus(
            revision=self.revision,
            state=self.state,
            executor_id=self.executor_id,
            reused=self.reused,
            handle=self.handle,
            expires_at=self.expires_at_ms,
            run_id=self.run_id,
            error_code=self.error_code,
        )

    def expired(self, now_ms: int) -> bool:
        return self.expires_at_ms != 0 and now_ms >= self.expires_at_ms

    @property
    def settled(self) -> bool:
        return self.state in (
            PreparationState.STARTED,
            PreparationState.RELEASED,
            PreparationState.EXPIRED,
            PreparationState.FAILED,
        )


class AdmissionTable:
    def __init__(self) -> None:
        self._records: dict[str, AdmissionRecord] = {}

    def get(self, request_id: str) -> AdmissionRecord | None:
        return self._records.get(request_id)

    def by_handle(self, handle: str) -> AdmissionRecord | None:
        return next((r for r in self._records.values() if r.handle == handle), None)

    def active_preparations(self) -> int:
        return sum(1 for r in self._records.values() if r.state is PreparationState.PREPARING)

    def add(self, record: AdmissionRecord, now_ms: int) -> bool:
        """Keep the record if there is room (after pruning); return whether it was kept."""
        if len(self._records) >= limits.MAX_ADMISSION_RECORDS:
            self._prune(now_ms)
        if len(self._records) >= limits.MAX_ADMISSION_RECORDS:
            return False
        self._records[record.request_id] = record
        return True

    def _prune(self, now_ms: int) -> None:
        for request_id, record in list(self._records.items()):
            if record.settled or (
                record.expired(now_ms) and record.state is PreparationState.READY
            ):
                del self._records[request_id]
            if len(self._records) < limits.MAX_ADMISSION_RECORDS:
                return

    def records(self) -> list[AdmissionRecord]:
        return list(self._records.values())

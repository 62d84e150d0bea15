"""The Runtime's timers, in one place: every deadline the seed gives the Runtime, with
its production value from `runtime.proto.limits`. The composition root uses the
defaults; tests inject shorter ones (never a shorter production value)."""

from __future__ import annotations

from dataclasses import dataclass

from runtime.proto import limits


@dataclass(frozen=True)
class Timers:
    # A transfer (`workspace_write`, `runtime_prepare`) whose next step does not arrive
    # within this wait expires: it ends `rejected` and frees the connection's slot.
    transfer_body_wait: float = limits.TRANSFER_BODY_WAIT_SECONDS
    # A workspace read still running after this is answered `read_unconfirmed`.
    workspace_read: float = limits.WORKSPACE_READ_RUNTIME_TIMEOUT_SECONDS
    # An idle Executor kept for its Session's next Turn is closed after this.
    executor_idle: float = limits.EXECUTOR_IDLE_SECONDS
    # An export not pulled to its end within this (from its begin) is dropped.
    export_deadline: float = limits.EXPORT_DEADLINE_SECONDS

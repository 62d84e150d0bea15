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

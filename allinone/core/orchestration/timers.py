"""The timers that bound how long Core waits on a Runtime before an outcome becomes a
finite, visible unknown (seed 000). Production uses the defaults; the composition root
passes one `Timers` to the orchestrator, and tests pass shorter ones to exercise the
same code paths without waiting out the real durations.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.proto import limits

PREPARATION_TIMEOUT_SECONDS = 60.0
START_TIMEOUT_SECONDS = 30.0
LEASE_SECONDS = 60
LEASE_RENEW_SECONDS = 20
LEASE_SWEEP_SECONDS = 30.0


@dataclass(frozen=True)
class Timers:
    """How long Core waits for each Runtime answer (seconds).

    `preparation`: a preparation's next status before the turn fails `delivery_unknown`.
    `start`: the `started` status after `execution_start`.
    `lease`: a claimed turn's lease (whole seconds: leases are stored in seconds);
    `lease_renew`: how often observation renews it; `lease_sweep`: how often lapsed
    leases are failed `lease_expired`.
    `cancel_confirmation`: the cancellation receipt before `cancel_unconfirmed`.
    `written_confirmation`: a steering input's first receipt before it is unknown.
    `interaction_ack`: a function result's or decision's receipt before it is unknown.
    """

    preparation: float = PREPARATION_TIMEOUT_SECONDS
    start: float = START_TIMEOUT_SECONDS
    lease: int = LEASE_SECONDS
    lease_renew: float = LEASE_RENEW_SECONDS
    lease_sweep: float = LEASE_SWEEP_SECONDS
    cancel_confirmation: float = limits.CANCELLATION_CONFIRMATION_TIMEOUT_SECONDS
    written_confirmation: float = limits.WRITTEN_CONFIRMATION_TIMEOUT_SECONDS
    interaction_ack: float = limits.INTERACTION_ACK_TIMEOUT_SECONDS


__all__ = ["Timers"]

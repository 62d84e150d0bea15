"""Core's protocol timers for a turn (seed 000), in one place.

Production uses the defaults, which are the seed's values; the composition root passes
them to the orchestrator and the lease sweep. Tests may build shorter ones to observe a
timer firing, never production.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.proto import limits


@dataclass(frozen=True)
class Timers:
    # No final preparation status in time: the turn fails `delivery_unknown`.
    preparation_seconds: float = 60.0
    # `execution_start` sent, no `started` in time: the turn fails `delivery_unknown`.
    start_seconds: float = 30.0
    # From the moment a cancellation is sent: no confirmation in time is
    # `cancel_unconfirmed`.
    cancel_unconfirmed_seconds: float = limits.CANCELLATION_CONFIRMATION_TIMEOUT_SECONDS
    # A steering message sent, no `written` receipt in time: its outcome is unknown.
    steer_written_seconds: float = limits.WRITTEN_CONFIRMATION_TIMEOUT_SECONDS
    # A function result or decision sent, no receipt in time: its outcome is unknown.
    receipt_seconds: float = limits.CANCELLATION_CONFIRMATION_TIMEOUT_SECONDS
    # A claimed turn's lease; its owner renews it while it observes the run.
    lease_seconds: int = 60
    lease_renew_seconds: float = 20.0
    # How often the lease sweep looks for turns whose owner stopped renewing.
    lease_sweep_seconds: float = 30.0
    # How often the queue is looked at when nothing woke it.
    retry_seconds: float = 1.0

    def __post_init__(self) -> None:
        if self.lease_renew_seconds >= self.lease_seconds:
            raise ValueError("the lease must be renewed before it expires")


PRODUCTION = Timers()

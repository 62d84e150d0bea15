"""Where a frame from a Runtime goes: a pure function of the frame, tested frame by frame.

`route(frame, interaction_runs)` names the destination of one decoded Runtime -> Core
frame; the Connection then delivers to it. Nothing here awaits, holds a queue or mutates
state: the one piece of connection state routing needs (which Run opened an
interaction) is passed in, and a destination that opens an interaction says so for the
Connection to remember.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from runtime.proto import codec
from runtime.proto.codec import Frame
from runtime.proto.execution import PreparationStatus
from runtime.proto.heartbeat import Heartbeat
from runtime.proto.interactions import (
    InteractionDecisionAck,
    PermissionRequest,
    PromptForUserChoice,
)
from runtime.proto.steering import PromptSteerAck


class ToHeartbeat(NamedTuple):
    """The capability snapshot of the connection."""

    heartbeat: Heartbeat


class ToPreparation(NamedTuple):
    """The preparation subscription of a request id."""

    request_id: str
    status: PreparationStatus


class ToReceipt(NamedTuple):
    """The waiter of a delivery, then (in order with its frames) the Run's subscription."""

    run_id: str
    ack: InteractionDecisionAck


class ToOperation(NamedTuple):
    """The waiter of a workspace operation or transfer."""

    operation_id: str


class ToSteer(NamedTuple):
    """The waiter of one steering input of a Run."""

    run_id: str
    ack: PromptSteerAck


class ToRun(NamedTuple):
    """A Run's subscription. `opens` is the interaction id this frame opens (to remember
    as owned by the Run), None when it opens none; `last` is True for `done`, which ends
    the subscription."""

    run_id: str
    opens: str | None = None
    last: bool = False


class Nowhere(NamedTuple):
    """No route on a connection; logged and dropped."""

    reason: str


Destination = ToHeartbeat | ToPreparation | ToReceipt | ToOperation | ToSteer | ToRun | Nowhere

OPERATION_RESULTS = frozenset(
    {
        "workspace_read_result",
        "workspace_write_result",
        "workspace_export_result",
        "runtime_prepare_result",
        "environment_quiesced",
        "environment_resumed",
    }
)
# Run-scoped frames besides the Run events; later protocol families route the same way.
RUN_ROUTED = codec.RUN_EVENT_TYPES | {"function_call"}


def route(frame: Frame, interaction_runs: Mapping[str, str]) -> Destination:
    """The destination of one decoded Runtime -> Core frame.

    `interaction_runs` maps each interaction id a Run opened to that Run's id; a
    `permission_cancel` (whose id is the interaction's) is routed through it."""
    match frame.type:
        case "heartbeat":
            return ToHeartbeat(frame.payload)
        case "preparation_status":
            return ToPreparation(frame.id, frame.payload)
        case "interaction_decision_ack":
            return ToReceipt(frame.id, frame.payload)
        case "prompt_steer_ack":
            return ToSteer(frame.id, frame.payload)
        case type_ if type_ in OPERATION_RESULTS:
            return ToOperation(frame.id)
        case "permission_cancel":
            return ToRun(interaction_runs.get(frame.id, ""))
        case "permission_request":
            request: PermissionRequest = frame.payload
            return ToRun(frame.id, opens=request.request_id)
        case "prompt_for_user_choice":
            ask: PromptForUserChoice = frame.payload
            return ToRun(frame.id, opens=ask.ask_id)
        case type_ if type_ in RUN_ROUTED:
            return ToRun(frame.id, last=type_ == "done")
    return Nowhere("no_route")

"""The gateway's routing, frame by frame, without an event loop: every Runtime -> Core
message type has exactly the destination its envelope id names."""

import pytest

from allinone.core.gateway.routing import (
    Nowhere,
    ToHeartbeat,
    ToOperation,
    ToPreparation,
    ToReceipt,
    ToRun,
    ToSteer,
    route,
)
from runtime.proto import codec, interactions, run
from runtime.proto.codec import RUNTIME_TO_CORE, Frame
from runtime.proto.execution import PreparationState, PreparationStatus
from runtime.proto.heartbeat import Heartbeat
from runtime.proto.steering import PromptSteerAck

NO_INTERACTIONS: dict[str, str] = {}


def _frame(type_: str, id_: str, payload: object = None) -> Frame:
    return Frame(type_, id_, payload, "")


def test_a_heartbeat_goes_to_the_capability_snapshot() -> None:
    beat = Heartbeat(ts=1, active_requests=0, supported_agent_kinds=[])
    assert route(_frame("heartbeat", "", beat), NO_INTERACTIONS) == ToHeartbeat(beat)


def test_a_status_goes_to_the_preparation_of_its_request_id() -> None:
    status = PreparationStatus(revision=1, state=PreparationState.READY)
    destination = route(_frame("preparation_status", "prep_1", status), NO_INTERACTIONS)
    assert destination == ToPreparation("prep_1", status)


def test_a_receipt_goes_to_its_delivery_and_its_run() -> None:
    ack = interactions.InteractionDecisionAck(delivery_id="d1", applied=True)
    destination = route(_frame("interaction_decision_ack", "run_1", ack), NO_INTERACTIONS)
    assert destination == ToReceipt("run_1", ack)


def test_a_steer_receipt_goes_to_its_run_and_input() -> None:
    ack = PromptSteerAck(input_id="in_1", accepted=True)
    assert route(_frame("prompt_steer_ack", "run_1", ack), NO_INTERACTIONS) == ToSteer("run_1", ack)


@pytest.mark.parametrize(
    "type_",
    [
        "workspace_read_result",
        "workspace_write_result",
        "workspace_export_result",
        "runtime_prepare_result",
    ],
)
def test_operation_results_go_to_their_operation(type_: str) -> None:
    assert route(_frame(type_, "op-1"), NO_INTERACTIONS) == ToOperation("op-1")


@pytest.mark.parametrize("type_", sorted(codec.RUN_EVENT_TYPES - {"done"} | {"function_call"}))
def test_run_frames_go_to_their_run(type_: str) -> None:
    assert route(_frame(type_, "run_1"), NO_INTERACTIONS) == ToRun("run_1")


def test_done_is_the_last_frame_of_its_run() -> None:
    assert route(_frame("done", "run_1", run.Done()), NO_INTERACTIONS) == ToRun("run_1", last=True)


def test_an_interaction_request_opens_its_interaction_on_the_run() -> None:
    request = interactions.PermissionRequest(request_id="perm_1", tool="t", title="x")
    destination = route(_frame("permission_request", "run_1", request), NO_INTERACTIONS)
    assert destination == ToRun("run_1", opens="perm_1")


def test_a_user_choice_opens_its_ask_on_the_run() -> None:
    ask = interactions.PromptForUserChoice(ask_id="ask_1", questions=[])
    destination = route(_frame("prompt_for_user_choice", "run_1", ask), NO_INTERACTIONS)
    assert destination == ToRun("run_1", opens="ask_1")


def test_a_cancel_goes_to_the_run_that_opened_the_interaction() -> None:
    cancel = _frame("permission_cancel", "perm_1")
    assert route(cancel, {"perm_1": "run_1"}) == ToRun("run_1")
    assert route(cancel, NO_INTERACTIONS) == ToRun("")


def test_a_frame_without_a_route_goes_nowhere() -> None:
    assert isinstance(route(_frame("nonsense", "x"), NO_INTERACTIONS), Nowhere)


@pytest.mark.parametrize("type_", ["environment_quiesced", "environment_resumed"])
def test_suspension_replies_go_to_the_request_by_its_suspension_id(type_: str) -> None:
    assert route(_frame(type_, "pause-turn_1"), NO_INTERACTIONS) == ToOperation("pause-turn_1")


def test_every_runtime_message_type_has_a_decided_destination() -> None:
    openers = {
        "permission_request": interactions.PermissionRequest("p", "t", "x"),
        "prompt_for_user_choice": interactions.PromptForUserChoice("a", []),
    }
    routed = {
        type_
        for type_ in RUNTIME_TO_CORE
        if not isinstance(route(_frame(type_, "x", openers.get(type_)), NO_INTERACTIONS), Nowhere)
    }
    assert RUNTIME_TO_CORE.keys() - routed == set()

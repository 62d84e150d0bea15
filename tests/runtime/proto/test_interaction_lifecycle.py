"""The interaction lifecycle: deliveries, receipts, withdrawal and unknown outcomes."""

import pytest

from runtime.proto.errors import DecodeErrorCode, LifecycleErrorCode, ValidationError
from runtime.proto.interaction_lifecycle import (
    INTERACTION_TRANSITIONS,
    TERMINAL_INTERACTION_STATES,
    IllegalInteractionTransition,
    Interaction,
    InteractionKind,
    InteractionState,
    check_interaction_transition,
)
from runtime.proto.interactions import InteractionDecisionAck


def _pending() -> Interaction:
    return Interaction(InteractionKind.PERMISSION, "perm_1", "run")


def test_the_table_covers_every_state_and_terminal_states_end() -> None:
    assert set(INTERACTION_TRANSITIONS) == set(InteractionState)
    for state in TERMINAL_INTERACTION_STATES:
        assert INTERACTION_TRANSITIONS[state] == frozenset()


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (InteractionState.PENDING, InteractionState.APPLIED),
        (InteractionState.PENDING, InteractionState.UNKNOWN),
        (InteractionState.APPLIED, InteractionState.DELIVERING),
        (InteractionState.WITHDRAWN, InteractionState.DELIVERING),
        (InteractionState.UNKNOWN, InteractionState.APPLIED),
    ],
)
def test_illegal_transitions_raise_a_dedicated_error(
    current: InteractionState, target: InteractionState
) -> None:
    with pytest.raises(IllegalInteractionTransition) as caught:
        check_interaction_transition(current, target)
    assert caught.value.code == LifecycleErrorCode.INVALID_TRANSITION


def test_an_applied_receipt_settles_the_interaction() -> None:
    interaction = _pending()
    interaction.deliver("delivery-1")
    assert interaction.acknowledge(InteractionDecisionAck("delivery-1", True)) is (
        InteractionState.APPLIED
    )
    assert interaction.terminal
    with pytest.raises(IllegalInteractionTransition):
        interaction.deliver("delivery-2")


def test_a_refused_decision_allows_another_with_a_fresh_delivery() -> None:
    interaction = _pending()
    interaction.deliver("delivery-1")
    refused = InteractionDecisionAck("delivery-1", False, "not_ready")
    assert interaction.acknowledge(refused) is InteractionState.REJECTED
    assert interaction.error_code == "not_ready"
    with pytest.raises(ValidationError) as caught:
        interaction.deliver("delivery-1")
    assert caught.value.code == "decision_conflict"
    interaction.deliver("delivery-2")
    assert interaction.error_code == ""
    interaction.acknowledge(InteractionDecisionAck("delivery-2", True))
    assert interaction.state is InteractionState.APPLIED


def test_not_pending_means_the_runtime_no_longer_holds_the_interaction() -> None:
    interaction = _pending()
    interaction.deliver("delivery-1")
    ack = InteractionDecisionAck("delivery-1", False, "not_pending")
    assert interaction.acknowledge(ack) is InteractionState.WITHDRAWN


def test_a_receipt_for_another_delivery_changes_nothing() -> None:
    interaction = _pending()
    interaction.deliver("delivery-1")
    with pytest.raises(ValidationError) as caught:
        interaction.acknowledge(InteractionDecisionAck("delivery-0", True))
    assert caught.value.code == DecodeErrorCode.INVALID_RECEIPT
    assert interaction.state is InteractionState.DELIVERING


def test_a_lost_receipt_is_unknown_and_only_an_explicit_retry_delivers_again() -> None:
    interaction = _pending()
    interaction.deliver("delivery-1")
    interaction.lose()
    assert interaction.state is InteractionState.UNKNOWN
    with pytest.raises(IllegalInteractionTransition):
        interaction.acknowledge(InteractionDecisionAck("delivery-1", True))
    interaction.deliver("delivery-2")
    interaction.acknowledge(InteractionDecisionAck("delivery-2", True))
    assert interaction.state is InteractionState.APPLIED


def test_a_withdrawn_request_accepts_no_decision() -> None:
    interaction = _pending()
    interaction.withdraw()
    assert interaction.terminal
    with pytest.raises(IllegalInteractionTransition):
        interaction.deliver("delivery-1")
    with pytest.raises(IllegalInteractionTransition):
        interaction.lose()


def test_acknowledging_without_a_delivery_is_illegal() -> None:
    with pytest.raises(IllegalInteractionTransition):
        _pending().acknowledge(InteractionDecisionAck("delivery-1", True))

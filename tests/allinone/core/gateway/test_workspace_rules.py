"""The workspace operations' protocol rules, without an event loop."""

from __future__ import annotations

import uuid

import pytest

from allinone.core.gateway.setup_progress import (
    CREATING,
    INSTALLING,
    RUNNING_SETUP,
    SetupProgress,
)
from allinone.core.gateway.workspace import progress_of
from allinone.core.gateway.workspace_rules import (
    WorkspaceUnavailable,
    initialization_steps,
    read_only_configuration,
    settle_transfer,
    wire_uuid,
)
from runtime.proto.initialization import InitializationAction
from runtime.proto.transfers import TransferOutcome


def test_an_unknown_terminal_leaves_the_outcome_unknown() -> None:
    with pytest.raises(WorkspaceUnavailable) as raised:
        settle_transfer(TransferOutcome.UNKNOWN, "")
    assert (raised.value.code, raised.value.unknown) == ("unconfirmed", True)


@pytest.mark.parametrize("outcome", [TransferOutcome.REJECTED, TransferOutcome.FAILED])
def test_a_rejected_or_failed_terminal_means_it_did_not_happen(outcome: TransferOutcome) -> None:
    with pytest.raises(WorkspaceUnavailable) as raised:
        settle_transfer(outcome, "write_rejected")
    assert (raised.value.code, raised.value.unknown) == ("write_rejected", False)


@pytest.mark.parametrize(
    "outcome", [TransferOutcome.READY, TransferOutcome.RECEIVED, TransferOutcome.COMPLETED]
)
def test_a_step_receipt_lets_the_transfer_continue(outcome: TransferOutcome) -> None:
    settle_transfer(outcome, "")


def test_initialization_runs_configuration_then_packages_then_setup() -> None:
    steps = initialization_steps(
        {"A": "1"},
        {"npm": ["left-pad"], "python": ["six"]},
        [{"command": "make"}, {"command": "true", "cwd": "src"}],
    )
    assert [s.action for s in steps] == [
        InitializationAction.CONFIGURE,
        InitializationAction.PYTHON,
        InitializationAction.NPM,
        InitializationAction.SETUP,
        InitializationAction.SETUP,
    ]
    assert (steps[-1].command, steps[-1].cwd) == ("true", "src")
    assert initialization_steps({}, {}, []) == []


def test_a_read_only_configuration_binds_the_environment_and_runs_nothing() -> None:
    environment = {"wire_id": wire_uuid("env_1"), "type": "openai_hosted"}
    config = read_only_configuration("scripted", environment)
    assert config.workspace_read_only is True
    assert config.local_environment is not None
    assert config.local_environment.id == str(uuid.UUID(environment["wire_id"]))
    assert wire_uuid("env_1") == wire_uuid("env_1") != wire_uuid("env_2")


def test_the_packages_of_a_kind_are_one_step_whose_progress_names_them_and_their_place() -> None:
    steps = initialization_steps(
        {"A": "1"}, {"python": ["six", "attrs"], "npm": ["left-pad"]}, [{"command": "make"}]
    )
    # Resolved together by one installer call per kind.
    assert [s.packages for s in steps[1:3]] == [["six", "attrs"], ["left-pad"]]
    assert progress_of(steps) == [
        SetupProgress(CREATING),
        SetupProgress(INSTALLING, 0, 3, "python", "six, attrs"),
        SetupProgress(INSTALLING, 2, 3, "npm", "left-pad"),
        SetupProgress(RUNNING_SETUP, 0, 1),
    ]

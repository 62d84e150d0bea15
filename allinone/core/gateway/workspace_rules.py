"""The protocol rules of Core's workspace operations, without I/O: how a Core
identifier travels on the wire, the binding and configuration of a read-only
preparation, the order of an Environment's initialization steps, and what a transfer's
terminal receipt means.
"""

from __future__ import annotations

import uuid
from typing import Any

from allinone.core.errors import CoreError
from runtime.proto.execution import (
    AgentOptions,
    ExecutionConfiguration,
    ExecutionControls,
    LocalEnvironment,
    WorkspaceSeed,
)
from runtime.proto.initialization import InitializationAction, RuntimeInitialization
from runtime.proto.transfers import TransferOutcome

WORKSPACE_CAPABILITIES = ["local_environment", "workspace_read_preparation"]
_NAMESPACE = uuid.UUID("6f1c2d8e-7a41-4b5e-9c3a-2f0d7e1b9a64")


class WorkspaceUnavailable(CoreError):
    """The operation did not happen, or its outcome is unknown (`unknown` is set)."""

    def __init__(self, code: str, unknown: bool = False) -> None:
        super().__init__(code)
        self.code = code
        self.unknown = unknown


class BindRefused(WorkspaceUnavailable):
    """The Runtime refused to bind the environment (`code`): nothing was sent to it, so
    nothing happened and a later attempt may bind it."""


def wire_uuid(identifier: str) -> str:
    """The canonical UUID a Core identifier travels as where the protocol needs one."""
    return str(uuid.uuid5(_NAMESPACE, identifier))


def binding(environment: dict[str, Any]) -> LocalEnvironment:
    """The wire binding of an environment row (a forked managed one names its seed)."""
    seed = None
    if environment.get("seed_wire_id") and environment.get("seed_snapshot"):
        seed = WorkspaceSeed(
            environment_id=environment["seed_wire_id"], snapshot=environment["seed_snapshot"]
        )
    return LocalEnvironment(
        id=environment["wire_id"],
        type=environment["type"],
        workspace_directory=environment.get("workspace_directory") or "",
        seed=seed,
    )


def settle_transfer(outcome: TransferOutcome, code: str) -> None:
    """After a checked receipt: a terminal one ends the transfer. `rejected` and
    `failed` mean it did not happen; `unknown` means nobody knows."""
    if outcome == TransferOutcome.UNKNOWN:
        raise WorkspaceUnavailable(code or "unconfirmed", unknown=True)
    if outcome in (TransferOutcome.REJECTED, TransferOutcome.FAILED):
        raise WorkspaceUnavailable(code or "rejected")


def read_only_configuration(harness: str, environment: dict[str, Any]) -> ExecutionConfiguration:
    """The `execution_prepare` configuration of a read-only preparation bound to
    `environment` (it never runs a model)."""
    return ExecutionConfiguration(
        agent_kind=harness,
        agent_options=AgentOptions(model="workspace"),
        execution_controls=ExecutionControls(
            web_search="disabled",
            text_verbosity="medium",
            disable_programmatic_tool_calling=True,
        ),
        local_environment=binding(environment),
        workspace_read_only=True,
    )


def initialization_steps(
    env: dict[str, str], packages: dict[str, list[str]], setup: list[dict[str, Any]]
) -> list[RuntimeInitialization]:
    """After the initial files, in order: configuration, packages, setup commands. The
    packages of one kind are one step, installed by one call of their installer, so they
    are resolved together (one at a time, a later package could silently replace what an
    earlier one needs); the receipt of each step tells how far set-up is."""
    steps: list[RuntimeInitialization] = []
    if env:
        steps.append(RuntimeInitialization(action=InitializationAction.CONFIGURE, env=env))
    for kind in ("python", "npm"):
        if listed := list(packages.get(kind) or []):
            steps.append(RuntimeInitialization(action=InitializationAction(kind), packages=listed))
    for command in setup:
        steps.append(
            RuntimeInitialization(
                action=InitializationAction.SETUP,
                command=command["command"],
                cwd=command.get("cwd") or "",
            )
        )
    return steps

"""What every turn's execution uses, built once by the orchestrator from what the
composition root passed it."""

from __future__ import annotations

from dataclasses import dataclass

from allinone.core.environments import Environments
from allinone.core.gateway.preparations import Preparations
from allinone.core.ids import Clock, Ids
from allinone.core.orchestration.credentials import RunCredentials
from allinone.core.orchestration.outcomes import Outcomes
from allinone.core.orchestration.projector import Projector
from allinone.core.orchestration.timers import Timers
from storage.database import Database


@dataclass(frozen=True)
class Collaborators:
    db: Database
    projector: Projector
    outcomes: Outcomes
    ids: Ids
    clock: Clock
    timers: Timers
    preparations: Preparations
    environments: Environments | None = None
    credentials: RunCredentials | None = None
    # The Core process that claims (recorded on each claim; None: not recorded).
    process_id: str | None = None

"""How far an environment's initialization is, as the workspace client reports it
before each step it sends: a pure value, recorded and shown by Core
(`allinone.core.environment_setup`).

Phases, in order: `creating` (initial files, skills and configuration), `installing`
(one kind at a time: `package` lists the packages being installed together and `kind`
names their installer, `done` of `total` packages already in), `running_setup` (setup
command `done + 1` of `total`; the command itself is sealed and never shown), then
`done` or `failed` (with `failure`). The packages of one kind travel as one `initialize`
transfer (resolved together by one installer call), so the Runtime's `completed`
receipt for it (an existing frame of the protocol) is its report that they are
installed; no frame is added.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

CREATING = "creating"
INSTALLING = "installing"
RUNNING_SETUP = "running_setup"
DONE = "done"
FAILED = "failed"
PHASES = (CREATING, INSTALLING, RUNNING_SETUP, DONE, FAILED)


@dataclass(frozen=True)
class SetupProgress:
    phase: str
    done: int = 0
    total: int = 0
    kind: str = ""
    package: str = ""
    failure: str = ""

    def record(self, now: int) -> dict[str, Any]:
        """The stored (and rendered) form; `updated_at` is when this step began."""
        return {
            "phase": self.phase,
            "done": self.done,
            "total": self.total,
            "kind": self.kind or None,
            "package": self.package or None,
            "failure": self.failure or None,
            "updated_at": now,
        }


# What the initialization calls before each step it sends (and once at its end).
Report = Callable[[SetupProgress], Awaitable[None]]


async def ignore(_progress: SetupProgress) -> None:
    """A report that records nothing (an initialization nobody watches)."""

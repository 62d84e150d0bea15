"""Where a managed environment's set-up stands, as Core records it while it initializes
the environment, durably on the environment row: a retrieve shows it as
`x_corebox.setup`, and the console and `corebox environments wait` draw it.

Phases, in order: `creating` (initial files, skills and configuration), `installing`
(one package at a time: `package` and its `kind`, `done` of `total` packages already in),
`running_setup` (setup command `done + 1` of `total`; the command itself is sealed and
never shown), then `done` or `failed` (with `failure`). Each package travels as its own
`initialize` transfer, so the Runtime's `completed` receipt for it (an existing frame of
the protocol) is its report that the package is installed; no frame is added.
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


def rendered(row: dict[str, Any]) -> dict[str, Any] | None:
    """`x_corebox.setup` of an environment row: the recorded step, shown `failed` when
    the environment failed after it (e.g. a set-up interrupted by a restart)."""
    setup = row.get("setup")
    if not isinstance(setup, dict):
        return None
    if row.get("status") == "failed" and setup.get("phase") != FAILED:
        return {**setup, "phase": FAILED, "failure": row.get("failure")}
    return dict(setup)


def environment_event(row: dict[str, Any], setup: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(type, body without session and turn) of the session event that tells a waiting
    session where its environment's set-up stands; the body's `environment` has the
    SDK's state fields, the step is under `x_corebox.setup`."""
    status = {DONE: "ready", FAILED: "failed"}.get(setup.get("phase", ""), "pending")
    error = None
    if status == "failed":
        message = str(setup.get("failure") or "The environment could not be prepared.")
        error = {"code": "environment_setup_failed", "message": message, "type": "sandbox_error"}
    environment = {"id": row["id"], "type": row["type"], "status": status, "error": error}
    body = {"environment": environment, "x_corebox": {"setup": setup}}
    return f"agent.session.environment.{status}", body

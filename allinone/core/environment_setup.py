"""Where a managed environment's set-up stands, as Core records it while it initializes
the environment, durably on the environment row: a retrieve shows it as
`x_corebox.setup`, sessions waiting on the environment get it as
`agent.session.environment.*` events, and the console and `corebox environments wait`
draw it. The steps and their phases are `allinone.core.gateway.setup_progress`.
"""

from __future__ import annotations

from typing import Any

from allinone.core.gateway.setup_progress import DONE, FAILED


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

"""Session budgets: the official `spend_control`, enforced.

corebox has no price list of its own, so a session's spend is counted in token units:
`spend_control.limit` is compared with the total tokens its turns have used, and
`spend_control.consumed` reports that count (the README's differences section says
so). The check runs at the safe point before a turn is claimed: a turn that would
start with the budget already used up fails with `session_budget_exceeded` and never
reaches a model. A running turn whose reported usage goes past what was left when it
started is cancelled and fails with the same code (`orchestration/observation.py`).
"""

from __future__ import annotations

from typing import Any

from storage import budgets
from storage.rows import Queryable

BUDGET_CODE = "session_budget_exceeded"


def limit_of(session: dict[str, Any]) -> int | None:
    control = (session.get("options") or {}).get("spend_control") or {}
    limit = control.get("limit")
    return int(limit) if isinstance(limit, int) else None


async def consumed(q: Queryable, session_id: str) -> int:
    return await budgets.tokens_used(q, session_id)


async def refusal(q: Queryable, session: dict[str, Any]) -> str | None:
    """Why the session's next turn may not start, or None while its budget allows it."""
    limit = limit_of(session)
    if limit is None:
        return None
    used = await consumed(q, session["id"])
    if used < limit:
        return None
    return f"The session's spend_control limit ({limit}) is used up ({used} consumed)."


async def remaining(q: Queryable, session: dict[str, Any]) -> int | None:
    """Tokens left before the limit (None: unlimited)."""
    limit = limit_of(session)
    if limit is None:
        return None
    return limit - await consumed(q, session["id"])


async def spend_view(q: Queryable, session: dict[str, Any]) -> dict[str, Any] | None:
    """`spend_control` as the session shows it: the limit and what was consumed."""
    limit = limit_of(session)
    if limit is None:
        return None
    return {"limit": limit, "consumed": await consumed(q, session["id"])}

"""Session budgets: the official `spend_control`, enforced.

A session's spend is counted in USD cents when the owner's price table
(`allinone.config`, frozen into the session's execution settings as `price` at
creation) prices its model: `floor((input tokens x input price + output tokens x output
price) / 1e6)`. corebox has no price list of its own, so otherwise it is counted in
token units: `spend_control.limit` is compared with the total tokens the session's
turns have used, and `spend_control.consumed` reports that count (the README says so).

The check runs at the safe point before a turn is claimed: a turn that would
start with the budget already used up fails with `session_budget_exceeded` and never
reaches a model. A running turn whose reported usage goes past what was left when it
started is cancelled and fails with the same code (`orchestration/observation.py`).
"""

from __future__ import annotations

import math
from typing import Any

from storage import budgets, execution_settings
from storage.rows import Queryable

BUDGET_CODE = "session_budget_exceeded"


def limit_of(session: dict[str, Any]) -> int | None:
    control = (session.get("options") or {}).get("spend_control") or {}
    limit = control.get("limit")
    return int(limit) if isinstance(limit, int) else None


async def consumed(q: Queryable, session: dict[str, Any]) -> int:
    """Cents under a price table, tokens otherwise (see the module docstring)."""
    input_tokens, output_tokens, total = await budgets.tokens_used(q, session["id"])
    return spent(price_of(session), input_tokens, output_tokens, total)


def price_of(session: dict[str, Any]) -> dict[str, Any] | None:
    price = execution_settings.settings_of(session).get("price")
    return price if isinstance(price, dict) else None


def spent(price: dict[str, Any] | None, input_tokens: int, output_tokens: int, total: int) -> int:
    """What tokens cost in the session's unit: cents under `price`, else `total`."""
    if price is None:
        return total
    cost = input_tokens * float(price["input"]) + output_tokens * float(price["output"])
    return math.floor(cost / 1_000_000)


async def standing(q: Queryable, session: dict[str, Any]) -> tuple[str | None, int | None]:
    """Why the session's next turn may not start (None while its budget allows it),
    and the budget it has left then (None: unlimited, or refused): one read of what
    it consumed."""
    limit = limit_of(session)
    if limit is None:
        return None, None
    used = await consumed(q, session)
    if used < limit:
        return None, limit - used
    return f"The session's spend_control limit ({limit}) is used up ({used} consumed).", None


async def spend_view(q: Queryable, session: dict[str, Any]) -> dict[str, Any] | None:
    """`spend_control` as the session shows it: the limit and what was consumed."""
    limit = limit_of(session)
    if limit is None:
        return None
    return {"limit": limit, "consumed": await consumed(q, session)}

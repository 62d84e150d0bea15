"""Session budgets: the official `spend_control`, enforced.

A session's spend is counted in USD cents when the owner's price table
(`allinone.config`, frozen into the session's execution settings as `price` at
creation) prices its model: `(input tokens x input price + output tokens x output
price) / 1e6`, kept exact (a `Fraction` of the whole token counts the database sums;
a price is taken as the decimal it was written as). corebox has no price list of its
own, so otherwise it is counted in token units: `spend_control.limit` is compared with
the total tokens the session's turns have used. Every check compares the exact spend;
`spend_control.consumed` shows it floored to whole cents, as the official type says
(tokens are whole already), so a session may show `consumed` below its limit by less
than a cent and still be refused once the exact spend reaches the limit.

The check runs at the safe point before a turn is claimed: a turn that would start
with the budget already used up fails with `session_budget_exceeded` and never reaches
a model. A running turn is checked at each usage it reports, against the limit as it
stands then (a limit changed while the turn runs included): once the session's spend
is past the limit, the turn is cancelled and fails with the same code
(`orchestration/observation.py`).
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from storage import budgets, execution_settings
from storage.rows import Queryable

BUDGET_CODE = "session_budget_exceeded"


def limit_of(session: dict[str, Any]) -> int | None:
    """The session's `spend_control` limit; None: unlimited."""
    return limit_in(session.get("options") or {})


def limit_in(options: dict[str, Any]) -> int | None:
    control = options.get("spend_control") or {}
    limit = control.get("limit")
    return int(limit) if isinstance(limit, int) else None


async def consumed(q: Queryable, session: dict[str, Any]) -> Fraction:
    """Cents under a price table, tokens otherwise, exact (see the module docstring)."""
    return await _spent_by(q, session["id"], price_of(session))


def price_of(session: dict[str, Any]) -> dict[str, Any] | None:
    price = execution_settings.settings_of(session).get("price")
    return price if isinstance(price, dict) else None


def spent(
    price: dict[str, Any] | None, input_tokens: int, output_tokens: int, total: int
) -> Fraction:
    """What tokens cost in the session's unit, exactly: cents under `price`, else
    `total`."""
    if price is None:
        return Fraction(total)
    cost = input_tokens * _exact(price["input"]) + output_tokens * _exact(price["output"])
    return cost / 1_000_000


def _exact(price: Any) -> Fraction:
    """A price as the decimal it was written as (`0.1` is a tenth, not the binary float
    nearest it)."""
    return Fraction(str(price)) if isinstance(price, float) else Fraction(price)


async def _spent_by(q: Queryable, session_id: str, price: dict[str, Any] | None) -> Fraction:
    input_tokens, output_tokens, total = await budgets.tokens_used(q, session_id)
    return spent(price, input_tokens, output_tokens, total)


def shown(spend: Fraction) -> int:
    """`spend_control.consumed`: the spend floored to a whole unit (the official type's
    "floored to whole USD cents")."""
    return math.floor(spend)


def written(spend: Fraction) -> str:
    """The exact spend as a decimal (a cost in cents always has a finite one)."""
    if spend.denominator == 1:
        return str(spend.numerator)
    with localcontext() as context:
        context.prec = 80
        return format(Decimal(spend.numerator) / Decimal(spend.denominator), "f")


async def standing(q: Queryable, session: dict[str, Any]) -> str | None:
    """Why the session's next turn may not start (None while its budget allows it):
    its exact spend has reached its limit."""
    limit = limit_of(session)
    if limit is None:
        return None
    used = await consumed(q, session)
    if used < limit:
        return None
    return f"The session's spend_control limit ({limit}) is used up ({written(used)} consumed)."


async def exceeded(q: Queryable, session_id: str, price: dict[str, Any] | None) -> bool:
    """Whether the session's exact spend (a running turn's reported usage included) is
    past its limit as it stands now, read in the caller's transaction."""
    limit = limit_in(await budgets.options_now(q, session_id))
    if limit is None:
        return False
    return await _spent_by(q, session_id, price) > limit


async def spend_view(q: Queryable, session: dict[str, Any]) -> dict[str, Any] | None:
    """`spend_control` as the session shows it: the limit and what was consumed."""
    limit = limit_of(session)
    if limit is None:
        return None
    return {"limit": limit, "consumed": shown(await consumed(q, session))}

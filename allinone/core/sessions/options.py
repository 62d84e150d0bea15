"""Session options set at creation or by update, kept on the session and returned with
it: `review`, `prompt_cache_options` and `spend_control`.

corebox runs no automatic action reviewer, so `review: "auto_review"` is refused with
`unsupported_or_invalid_configuration`; `none` is kept. A prompt cache lifetime is kept
as given (`ttl` defaults to `30m`) and returned; the local harnesses keep no prompt
cache of their own, so it changes nothing they do (README, differences).
`spend_control: {"limit": null}` means no limit, as omitting it does: the session then
shows no `spend_control` (the SDK's type has no null limit), and on update it clears a
limit set before.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from allinone.core.errors import InvalidRequest
from allinone.core.shapes.models import SessionCreate, SessionUpdate

DEFAULT_CACHE_TTL = "30m"


def options_of(body: SessionCreate | SessionUpdate) -> dict[str, Any]:
    """The options `body` sets (a null `prompt_cache_options` or `spend_control`, or a
    `spend_control` with a null limit, clears it)."""
    options: dict[str, Any] = {}
    if body.review is not UNSET:
        if body.review == "auto_review":
            raise InvalidRequest(
                "review auto_review is not supported: corebox runs no automatic reviewer;"
                " use none and answer approvals yourself.",
                "review",
                code="unsupported_or_invalid_configuration",
            )
        options["review"] = body.review
    cache = body.prompt_cache_options
    if cache is None:
        options["prompt_cache_options"] = None
    elif cache is not UNSET:
        ttl = DEFAULT_CACHE_TTL if cache.ttl is UNSET else cache.ttl
        options["prompt_cache_options"] = {"ttl": ttl}
    spend = body.spend_control
    if spend is not UNSET:
        limited = spend is not None and spend.limit is not None
        options["spend_control"] = msgspec.to_builtins(spend) if limited else None
    return options

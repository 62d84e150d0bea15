"""`POST /core/v1/drain` (Core key): stop claiming new turns and bring running ones to a
safe point (seed 003 drain), as SIGTERM does before `corebox serve` stops.

While draining, `/readyz` answers 503 with status `draining`; running turns pause at
their next checkpoint within the budget and are left for a later start to continue.
Answers 202 with `{"object": "x_corebox.drain", "status": "draining", "budget_seconds"}`
(also when a drain was already under way).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.common import json

DRAIN_BUDGET_SECONDS = 30.0


class DrainApi:
    def __init__(self, drain: Callable[[float], bool]) -> None:
        self._drain = drain

    def routes(self) -> list[Route]:
        return [Route("/core/v1/drain", self.drain, methods=["POST"])]

    async def drain(self, request: Request) -> Response:
        self._drain(DRAIN_BUDGET_SECONDS)
        body = {
            "object": "x_corebox.drain",
            "status": "draining",
            "budget_seconds": DRAIN_BUDGET_SECONDS,
        }
        return json(body, 202)

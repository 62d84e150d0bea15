"""Tier 2, Core side: every shared wire scenario replayed against the real Core with a
scripted Runtime peer over a real loopback WebSocket.

A scenario with a `turn` runs the whole Core (`core_turns.py`): the turn is admitted
through the public API, Core's orchestrator sends every Core frame, and the turn's public
outcome is asserted as well as the frames. The others exercise frames a correct
orchestrator never sends on its own and drive the real gateway directly
(`core_side.py`). Neither imports the Runtime's implementation (only `runtime.proto`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from runtime.proto.scenarios import load, names
from tests.contract.core_side import CoreSide
from tests.contract.core_turns import CoreTurnSide

# Scenario name -> reason, only for Core behaviour that does not exist yet.
NOT_IMPLEMENTED: dict[str, str] = {}


def _cases() -> list[object]:
    return [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.xfail(strict=True, reason=NOT_IMPLEMENTED[name])]
            if name in NOT_IMPLEMENTED
            else [],
        )
        for name in names()
    ]


@pytest.mark.parametrize("name", _cases())
def test_core_side(name: str, tmp_path: Path) -> None:
    scenario = load(name)
    side = CoreSide if scenario.turn is None else CoreTurnSide
    asyncio.run(side(scenario, tmp_path).run())

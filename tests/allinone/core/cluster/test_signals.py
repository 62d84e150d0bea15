"""Signals between Core processes: handled here at once, and carried to the other
processes by PostgreSQL's notifications on a real server (tests/support/postgres.py)."""

from __future__ import annotations

import asyncio

import pytest

from allinone.core.cluster.signals import PostgresChannel, Signals, relay_turns


def test_one_process_handles_its_own_signals_and_carries_none() -> None:
    seen: list[str] = []
    signals = Signals("proc_a")
    signal = signals.relay("session", seen.append)
    signal("sess_1")
    assert seen == ["sess_1"]
    with pytest.raises(ValueError):
        signals.relay("nonsense", seen.append)


def test_signals_reach_the_other_process_through_notifications(postgres_url: str) -> None:
    async def main() -> None:
        here = Signals("proc_a", PostgresChannel(postgres_url))
        there = Signals("proc_b", PostgresChannel(postgres_url))
        woken_here: list[str] = []
        woken_there: list[str] = []
        arrived = asyncio.Event()

        def on_there(key: str) -> None:
            woken_there.append(key)
            if len(woken_there) == 2:
                arrived.set()

        signal = here.relay("session", woken_here.append)
        there.relay("session", on_there)
        cancelled_there: list[str] = []
        cancelled_here = asyncio.Event()
        ignore = cancelled_there.append
        turns_there = relay_turns(there, lambda: None, cancelled_there.append, ignore, ignore)
        relay_turns(here, lambda: None, lambda _k: cancelled_here.set(), ignore, ignore)
        await here.start()
        await there.start()
        try:
            signal("sess_1")
            signal("sess_2")
            await asyncio.wait_for(arrived.wait(), 10)
            assert woken_here == ["sess_1", "sess_2"]  # at once, and not again
            assert sorted(woken_there) == ["sess_1", "sess_2"]
            turns_there.cancel("turn_1")  # handled where it was sent, carried to `here`
            assert cancelled_there == ["turn_1"]
            await asyncio.wait_for(cancelled_here.wait(), 10)
        finally:
            await here.close()
            await there.close()
        assert (here.received, there.received) == (1, 2)

    asyncio.run(main())

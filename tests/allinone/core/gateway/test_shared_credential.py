"""Two real Runtime daemons sharing one device credential against the real gateway: each
new connection replaces the other's, and every reconnect waits the backoff, so the pair
makes a bounded number of connections instead of replacing each other in a tight loop."""

from __future__ import annotations

import asyncio
import logging
import random
from pathlib import Path

import pytest

from runtime.daemon import Daemon
from runtime.harness.registry import HarnessRegistry
from runtime.harness.scripted import ScriptedHarness
from runtime.proto import limits
from runtime.transport import Backoff
from tests.contract.core_gateway import GatewayHost

DEVICE = "shared-device"
CREDENTIAL = "shared-credential"
INITIAL, CAP = 0.02, 0.16  # the production schedule (1 s doubling to 30 s), scaled down
CONNECTIONS = 6


def most_connections(elapsed: float) -> int:
    """The most connections the schedule allows in `elapsed` seconds: the first one,
    plus one per delay whose shortest jittered value still fits."""
    total, count, attempt = 0.0, 1, 1
    while True:
        total += min(INITIAL * 2 ** (attempt - 1), CAP) * (1 - limits.BACKOFF_JITTER)
        if total > elapsed:
            return count
        count, attempt = count + 1, attempt + 1


def daemon(host: GatewayHost, seed: int) -> Daemon:
    harnesses = HarnessRegistry()
    harnesses.register(ScriptedHarness())
    return Daemon(
        f"{host.base_url}/api/v1",
        DEVICE,
        CREDENTIAL,
        harnesses,
        "test",
        backoff=Backoff(INITIAL, CAP, random.Random(seed)),
    )


def test_two_daemons_sharing_a_credential_reconnect_on_the_backoff_schedule(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        async with GatewayHost(tmp_path, DEVICE, CREDENTIAL) as host:
            loop = asyncio.get_running_loop()
            first, second = daemon(host, 1), daemon(host, 2)
            started = loop.time()
            tasks = [asyncio.create_task(d.run()) for d in (first, second)]
            try:
                assert await host.until(
                    lambda: min(first.connections, second.connections) >= CONNECTIONS, 30.0
                ), (first.connections, second.connections)
                elapsed = loop.time() - started
                for each in (first, second):
                    assert each.connections <= most_connections(elapsed), (
                        each.connections,
                        elapsed,
                    )
                    # Replaced connections never start the schedule over: it only grows.
                    delays = list(each.delays)
                    assert len(delays) >= CONNECTIONS - 1
                    for attempt, delay in enumerate(delays, start=1):
                        base = min(INITIAL * 2 ** (attempt - 1), CAP)
                        assert base * 0.8 <= delay <= base * 1.2, (attempt, delays)
            finally:
                for each in (first, second):
                    await each.stop()
                for task in tasks:
                    await asyncio.wait_for(task, 10.0)

    with caplog.at_level(logging.WARNING, logger="runtime.daemon"):
        asyncio.run(main())
    replaced = [r for r in caplog.records if "replaced by another connection" in r.getMessage()]
    assert replaced, caplog.text

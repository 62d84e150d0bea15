"""`device_shutdown` between the real gateway and the real Runtime daemon: once Core
asks a device to shut down nothing new is claimed to it, the Runtime closes its
connection and does not reconnect, and a Run it was executing ends as a lost
connection does (an observation error, never a fabricated `error` or `done`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from runtime.daemon import Daemon
from runtime.harness.registry import HarnessRegistry
from runtime.harness.scripted import ScriptedHarness
from tests.contract.core_gateway import WAIT_SECONDS, GatewayHost

DEVICE = "shutdown-device"
CREDENTIAL = "shutdown-credential"


def test_a_device_asked_to_shut_down_is_not_selected_and_its_runtime_stops(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with GatewayHost(tmp_path, DEVICE, CREDENTIAL) as host:
            harnesses = HarnessRegistry()
            harnesses.register(ScriptedHarness())
            daemon = Daemon(f"{host.base_url}/api/v1", DEVICE, CREDENTIAL, harnesses, "test")
            task = asyncio.create_task(daemon.run())
            try:
                assert await host.until(
                    lambda: (c := host.connection()) is not None and c.kinds is not None
                )
                connection = host.connection()
                assert connection is not None
                assert host.registry.select("scripted", []) is connection
                run = connection.subscribe_run("run")  # as if a Run were in flight
                assert await host.registry.shut_down(DEVICE, "operator")
                assert host.registry.select("scripted", []) is None
                await asyncio.wait_for(task, WAIT_SECONDS)  # run() returns: no reconnect
                assert await run.next(WAIT_SECONDS) is None
                assert run.error is not None
                assert await host.until(lambda: host.connection() is None)
                assert daemon.connections == 1
                assert not await host.registry.shut_down(DEVICE, "operator")
            finally:
                await daemon.stop()
                await asyncio.wait_for(task, WAIT_SECONDS)

    asyncio.run(main())

"""Heartbeats and close reasons against the real gateway on a loopback port: a heartbeat
shaped exactly as seed 000 describes is accepted, an invalid one closes with 1008 and
names its first invalid field in the log only, and a replaced connection is told why."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.contract.core_gateway import GatewayHost
from tests.contract.scripted_runtime import ScriptedRuntime

DEVICE = "heartbeat-device"
CREDENTIAL = "heartbeat-credential"
CAPABILITIES = json.loads(
    (Path(__file__).parents[4] / "runtime/proto/scenarios/fixture.json").read_text()
)["capabilities"]


def heartbeat(**changes: Any) -> str:
    """A heartbeat with exactly the fields the seed names (no `home_removal`)."""
    kind = {"kind": "contract", "available": True, "capabilities": CAPABILITIES, "version": "1"}
    payload = {"ts": 1, "active_requests": 0, "supported_agent_kinds": [kind], **changes}
    return json.dumps({"type": "heartbeat", "payload": payload})


def test_a_heartbeat_without_home_removal_is_accepted(tmp_path: Path) -> None:
    async def main() -> None:
        async with GatewayHost(tmp_path, DEVICE, CREDENTIAL) as host:
            peer = await ScriptedRuntime(host.base_url, DEVICE, CREDENTIAL).connect()
            await peer.send(heartbeat())
            assert await host.until(
                lambda: (c := host.connection()) is not None and c.kinds is not None
            )
            connection = host.connection()
            assert connection is not None and connection.available_kind("contract") is not None
            await peer.send(heartbeat(ts=2, home_removal=True))
            assert await host.until(lambda: connection.last_heartbeat_ts == 2)
            assert not peer.closed.is_set()
            await peer.close()

    asyncio.run(main())


def test_an_invalid_heartbeat_names_its_field_in_the_log_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    capabilities = {**CAPABILITIES, "streaming": "yes"}
    kind = {"kind": "contract", "available": True, "capabilities": capabilities}

    async def main() -> None:
        async with GatewayHost(tmp_path, DEVICE, CREDENTIAL) as host:
            peer = await ScriptedRuntime(host.base_url, DEVICE, CREDENTIAL).connect()
            await peer.send(heartbeat(supported_agent_kinds=[kind]))
            await peer.wait_closed()
            received = peer.ws.protocol.close_rcvd
            assert received is not None
            assert (received.code, received.reason) == (1008, "invalid_heartbeat")
            assert await host.until(lambda: host.connection() is None)

    with caplog.at_level(logging.WARNING, logger="allinone.core.gateway.server"):
        asyncio.run(main())
    field = "$.supported_agent_kinds[0].capabilities.streaming"
    assert any(field in record.getMessage() for record in caplog.records), caplog.text
    assert "yes" not in caplog.text


def test_a_replaced_connection_is_closed_with_the_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        async with GatewayHost(tmp_path, DEVICE, CREDENTIAL) as host:
            runtime = ScriptedRuntime(host.base_url, DEVICE, CREDENTIAL)
            old = await runtime.connect()
            await old.send(heartbeat())
            assert await host.until(lambda: host.connection() is not None)
            new = await runtime.connect()
            await old.wait_closed()
            received = old.ws.protocol.close_rcvd
            assert received is not None
            assert (received.code, received.reason) == (1000, "connection_replaced")
            await new.close()

    with caplog.at_level(logging.WARNING, logger="allinone.core.gateway.registry"):
        asyncio.run(main())
    assert "replaced the open one" in caplog.text

"""The gateway's HTTP shell against a real uvicorn server: bootstrap and upgrade errors
(401 without a credential, then 426 before the credential is checked), revocation
(close 4001) and device replacement."""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from allinone.core.gateway.connection import Connection
from allinone.core.gateway.refusals import RefusalLog
from allinone.core.gateway.server import MAX_BOOTSTRAP_BYTES
from runtime.proto.version import VERSION
from tests.contract.core_gateway import WAIT_SECONDS, GatewayHost
from tests.contract.scripted_runtime import RuntimePeer, ScriptedRuntime

DEVICE = "gateway-device"
CREDENTIAL = "gateway-credential"
HEARTBEAT = json.dumps(
    {"type": "heartbeat", "payload": {"ts": 1, "active_requests": 0, "home_removal": False}}
)


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=WAIT_SECONDS) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def connected(host: GatewayHost, runtime: ScriptedRuntime) -> tuple[RuntimePeer, Connection]:
    peer = await runtime.connect()
    await peer.send(HEARTBEAT)
    assert await host.until(lambda: (c := host.connection()) is not None and c.kinds is not None)
    connection = host.connection()
    assert connection is not None
    return peer, connection


def test_bootstrap_answers_finite_errors(tmp_path: Path) -> None:
    async def main() -> None:
        async with GatewayHost(tmp_path, DEVICE, CREDENTIAL) as host:
            url = f"{host.base_url}/api/v1/agent-daemon/bootstrap"
            body = json.dumps({"device_id": DEVICE}).encode()
            bearer = {"Authorization": f"Bearer {CREDENTIAL}"}
            cases = [
                (body, {}, 401, "missing_bearer"),
                (b"{not json", bearer, 400, "bad_json"),
                (b"{}", bearer, 400, "missing_device_id"),
                (json.dumps({"device_id": "other"}).encode(), bearer, 401, "unknown_device"),
                (body, {"Authorization": "Bearer wrong"}, 401, "unknown_device"),
                (b" " * (MAX_BOOTSTRAP_BYTES + 1), bearer, 413, "too_large"),
            ]
            for data, headers, status, code in cases:
                got = await asyncio.to_thread(post, url, data, headers)
                assert got[0] == status and got[1]["error"] == code, got
                assert CREDENTIAL not in json.dumps(got[1])
            # A caller without the credential cannot tell which device ids exist: an
            # unknown device and a wrong credential get the same answer.
            unknown = await asyncio.to_thread(
                post, url, json.dumps({"device_id": "other"}).encode(), bearer
            )
            wrong = await asyncio.to_thread(post, url, body, {"Authorization": "Bearer wrong"})
            assert unknown == wrong
            status, info = await asyncio.to_thread(post, url, body, bearer)
            assert status == 200
            assert info == {
                "device_id": DEVICE,
                "ws_url": host.ws_url,
                "heartbeat_seconds": 3600,
                "protocol_version": VERSION,
            }

    asyncio.run(main())


def test_upgrade_checks_the_version_before_the_credential(tmp_path: Path) -> None:
    async def main() -> None:
        async with GatewayHost(tmp_path, DEVICE, CREDENTIAL) as host:
            wrong = ScriptedRuntime(host.base_url, DEVICE, "wrong")
            for version, status, code in (
                (f"{VERSION}-dev", 426, "incompatible_version"),
                (VERSION, 401, "unknown_device"),
                ("", 400, "missing_params"),
            ):
                with pytest.raises(InvalidStatus) as refused:
                    await wrong.dial(host.ws_url, version)
                response = refused.value.response
                assert response.status_code == status
                assert json.loads(response.body)["error"] == code
            # An unknown device is refused exactly as a wrong credential is.
            with pytest.raises(InvalidStatus) as unknown:
                await ScriptedRuntime(host.base_url, "other", CREDENTIAL).dial(host.ws_url, VERSION)
            with pytest.raises(InvalidStatus) as refused:
                await wrong.dial(host.ws_url, VERSION)
            denials = [unknown.value.response, refused.value.response]
            assert len({(r.status_code, bytes(r.body or b"")) for r in denials}) == 1
            assert not list(host.registry)

    asyncio.run(main())


def test_upgrade_without_a_credential_is_a_401_before_anything_else(tmp_path: Path) -> None:
    async def main() -> None:
        async with GatewayHost(tmp_path, DEVICE, CREDENTIAL) as host:
            for query in ("", f"?device_id={DEVICE}&version={VERSION}-dev"):
                with pytest.raises(InvalidStatus) as refused:
                    await connect(f"{host.ws_url}{query}", open_timeout=WAIT_SECONDS)
                response = refused.value.response
                assert response.status_code == 401
                assert response.headers["www-authenticate"] == "Bearer"
                assert json.loads(response.body)["error"] == "missing_bearer"
            assert not list(host.registry)

    asyncio.run(main())


def test_revoking_a_device_closes_its_connection_with_4001(tmp_path: Path) -> None:
    async def main() -> None:
        async with GatewayHost(tmp_path, DEVICE, CREDENTIAL) as host:
            runtime = ScriptedRuntime(host.base_url, DEVICE, CREDENTIAL)
            peer, connection = await connected(host, runtime)
            run = connection.subscribe_run("run")
            assert host.registry.revoke(DEVICE)
            await peer.wait_closed()
            assert peer.close_code == 4001
            assert await run.next(WAIT_SECONDS) is None
            assert run.error is not None and run.error.reason == "device_revoked"
            assert await host.until(lambda: host.connection() is None)
            assert not host.registry.revoke(DEVICE)

    asyncio.run(main())


def test_a_new_connection_replaces_the_old_one_and_inherits_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        async with GatewayHost(tmp_path, DEVICE, CREDENTIAL) as host:
            runtime = ScriptedRuntime(host.base_url, DEVICE, CREDENTIAL)
            old_peer, old = await connected(host, runtime)
            run = old.subscribe_run("run")
            new_peer = await runtime.connect()
            await old_peer.wait_closed()  # the superseded socket is closed, not left open
            assert await run.next(WAIT_SECONDS) is None
            assert run.error is not None and run.error.reason == "connection_replaced"
            await new_peer.send(HEARTBEAT)
            assert await host.until(lambda: (c := host.connection()) is not None and c is not old)
            current = host.connection()
            assert current is not None and current.run_subscription("run") is None
            await new_peer.close()

    asyncio.run(main())


def test_refused_credentials_are_logged_once_a_minute_per_address(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = [0.0]

    async def main() -> None:
        refusals = RefusalLog(clock=lambda: clock[0])
        async with GatewayHost(tmp_path, DEVICE, CREDENTIAL, refusals) as host:
            url = f"{host.base_url}/api/v1/agent-daemon/bootstrap"
            body = json.dumps({"device_id": DEVICE}).encode()
            wrong = {"Authorization": "Bearer wrong-credential"}
            for _ in range(3):  # a daemon knocking with a bad credential, every few seconds
                assert (await asyncio.to_thread(post, url, body, wrong))[0] == 401
                clock[0] += 5.0
            other = json.dumps({"device_id": "other\nforged line"}).encode()
            bearer = {"Authorization": f"Bearer {CREDENTIAL}"}
            assert (await asyncio.to_thread(post, url, other, bearer))[0] == 401
            assert (await asyncio.to_thread(post, url, body, bearer))[0] == 200
            clock[0] = 60.0
            with pytest.raises(InvalidStatus):
                await ScriptedRuntime(host.base_url, DEVICE, "wrong").dial(host.ws_url, VERSION)

    with caplog.at_level(logging.INFO, logger="allinone.core.gateway.refusals"):
        asyncio.run(main())
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name.endswith("refusals")]
    why = "no device has that id and credential (unknown or revoked device, or a wrong credential)"
    assert lines == [
        ("WARNING", f"runtime bootstrap from 127.0.0.1 refused for device '{DEVICE}': {why}"),
        (
            "WARNING",
            f"runtime connection from 127.0.0.1 refused for device '{DEVICE}': {why}"
            " (3 more refused since the last line)",
        ),
    ]
    assert not [r for r in caplog.records if "wrong-credential" in r.getMessage()]


def test_a_silent_connection_is_closed_for_its_silence(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        # The read timeout shortened from 60 s; the peer then sends nothing at all.
        async with GatewayHost(tmp_path, DEVICE, CREDENTIAL, read_timeout=0.5) as host:
            runtime = ScriptedRuntime(host.base_url, DEVICE, CREDENTIAL)
            peer, connection = await connected(host, runtime)
            run = connection.subscribe_run("run")
            assert await run.next(WAIT_SECONDS) is None
            assert run.error is not None and run.error.reason == "no frame for 0.5 s"
            await peer.wait_closed()
            assert await host.until(lambda: host.connection() is None)

    with caplog.at_level(logging.INFO, logger="allinone.core.gateway.server"):
        asyncio.run(main())
    assert f"runtime device {DEVICE} disconnected (no frame for 0.5 s)" in [
        r.getMessage() for r in caplog.records
    ]

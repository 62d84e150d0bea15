"""The Runtime's transport shell and daemon against a scripted Core on loopback ports:
backoff, bootstrap, the upgrade (credential only in the header), permanent refusals
(401/403/426, close 4001) and transient ones (reconnect, nothing replayed)."""

from __future__ import annotations

import asyncio
import logging
import random
import socket

import pytest

from runtime.coalesce import Coalesced
from runtime.daemon import Daemon
from runtime.harness.registry import HarnessRegistry
from runtime.harness.scripted import ScriptedHarness
from runtime.proto.version import VERSION
from runtime.transport import (
    Backoff,
    PermanentError,
    TransientError,
    backoff_delay,
    bootstrap,
    bootstrap_info,
    open_socket,
)
from tests.contract.controlled import Signal
from tests.contract.scripted_core import ScriptedCore

DEVICE = "transport-device"
CREDENTIAL = "transport-credential"
WAIT = 15.0


def test_backoff_starts_immediately_doubles_and_caps_with_jitter() -> None:
    rand = random.Random(7)
    assert backoff_delay(0) == 0.0
    for attempt, base in ((1, 1.0), (2, 2.0), (3, 4.0), (6, 30.0), (40, 30.0)):
        delay = backoff_delay(attempt, rand)
        assert base * 0.8 <= delay <= base * 1.2, (attempt, delay)


def test_backoff_schedule_doubles_to_its_cap_and_starts_over_on_reset() -> None:
    backoff = Backoff(rand=random.Random(3))
    bases = [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    for base in bases:
        delay = backoff.next_delay()
        assert base * 0.8 <= delay <= base * 1.2, (base, delay)
    backoff.reset()
    assert 0.8 <= backoff.next_delay() <= 1.2
    short = Backoff(0.5, 1.0, random.Random(3))
    assert [round(short.next_delay() / b, 6) <= 1.2 for b in (0.5, 1.0, 1.0)] == [True] * 3


def test_bootstrap_and_upgrade_refusals_are_classified() -> None:
    async def main() -> None:
        async with ScriptedCore(DEVICE, CREDENTIAL, VERSION, Signal()) as core:
            gone = core.core_url
            info = await bootstrap(core.core_url, CREDENTIAL, DEVICE)
            assert (info.device_id, info.ws_url, info.heartbeat_seconds) == (
                DEVICE,
                core.ws_url,
                3600,
            )
            with pytest.raises(PermanentError) as refused:
                await bootstrap(core.core_url, "wrong", DEVICE)
            assert refused.value.status == 401
            with pytest.raises(TransientError):  # 404: not an operator error
                await bootstrap(core.core_url.replace("/api/v1", "/elsewhere"), CREDENTIAL, DEVICE)
            with pytest.raises(PermanentError) as refused:
                await open_socket(core.ws_url, CREDENTIAL, DEVICE, version=f"{VERSION}-dev")
            assert refused.value.status == 426
            with pytest.raises(PermanentError) as refused:
                await open_socket(core.ws_url, "wrong", DEVICE)
            assert refused.value.status == 401
            socket = await open_socket(core.ws_url, CREDENTIAL, DEVICE)
            assert isinstance(socket.transport, Coalesced)  # one write per loop step
            await socket.close()
            assert core.all_violations() == [  # exactly the refusals provoked above
                "bootstrap without the Bearer credential",
                "bootstrap sent POST /elsewhere/agent-daemon/bootstrap",
                "upgrade without the Bearer credential",
            ]
        with pytest.raises(TransientError):  # nothing listens there any more
            await bootstrap(gone, CREDENTIAL, DEVICE)

    asyncio.run(main())


def _daemon(core: ScriptedCore, clock: list[float] | None = None) -> Daemon:
    harnesses = HarnessRegistry()
    harnesses.register(ScriptedHarness())
    now = clock if clock is not None else [0.0]
    return Daemon(
        core.core_url,
        DEVICE,
        CREDENTIAL,
        harnesses,
        "test",
        backoff=Backoff(0.01, 0.04, random.Random(5)),
        healthy_seconds=60.0,
        clock=lambda: now[0],
    )


def test_close_4001_stops_the_daemon_and_other_closes_reconnect() -> None:
    async def main() -> None:
        async with ScriptedCore(DEVICE, CREDENTIAL, VERSION, Signal()) as core:
            task = asyncio.create_task(_daemon(core).run())
            first = await core.next_peer()
            await first.first_heartbeat()
            await first.close(1011)  # transient: the daemon reconnects after its backoff
            second = await core.next_peer()
            beat = await second.first_heartbeat()
            assert [k.kind for k in beat.supported_agent_kinds] == ["scripted"]
            await second.expect_silence()  # nothing is replayed on the new connection
            await second.close(4001)
            with pytest.raises(PermanentError) as stopped:
                await asyncio.wait_for(task, WAIT)
            assert stopped.value.status == 4001
            assert (core.bootstraps, core.accepted) == (2, 2)
            assert not core.all_violations()

    asyncio.run(main())


def test_every_close_waits_the_backoff_which_starts_over_only_after_a_healthy_connection() -> None:
    async def main() -> None:
        clock = [0.0]
        async with ScriptedCore(DEVICE, CREDENTIAL, VERSION, Signal()) as core:
            daemon = _daemon(core, clock)
            task = asyncio.create_task(daemon.run())
            for code, up_for in ((1000, 0.0), (1000, 0.0), (1011, 60.0), (1000, 0.0)):
                peer = await core.next_peer()
                await peer.first_heartbeat()
                clock[0] += up_for  # how long this connection stayed up
                await peer.close(code)
            await core.next_peer()
            await daemon.stop()
            await asyncio.wait_for(task, WAIT)
            assert (core.bootstraps, core.accepted) == (5, 5)
        # 1st, 2nd: the schedule grows; 3rd stayed up 60 s: it starts over; 4th grows again.
        bases = [0.01, 0.02, 0.01, 0.02]
        delays = list(daemon.delays)
        assert len(delays) == len(bases), delays
        for base, delay in zip(bases, delays, strict=True):
            assert base * 0.8 <= delay <= base * 1.2, (bases, delays)

    asyncio.run(main())


def _closed_port() -> int:
    """A loopback port nothing listens on (it was just released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_core_that_does_not_answer_is_named_with_the_reason() -> None:
    async def main() -> None:
        port = _closed_port()
        with pytest.raises(TransientError) as failed:
            await bootstrap(f"http://127.0.0.1:{port}/api/v1", CREDENTIAL, DEVICE)
        assert str(failed.value) == (
            f"bootstrap at http://127.0.0.1:{port}/api/v1/agent-daemon/bootstrap failed: "
            "no answer (connection refused)"
        )
        with pytest.raises(TransientError) as failed:
            await open_socket(f"ws://127.0.0.1:{port}/ws", CREDENTIAL, DEVICE)
        assert str(failed.value) == (
            f"connection to ws://127.0.0.1:{port}/ws failed: no answer (connection refused)"
        )

        async def plain(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            writer.close()

        server = await asyncio.start_server(plain, "127.0.0.1", 0)
        async with server:
            plain_port = server.sockets[0].getsockname()[1]
            with pytest.raises(TransientError) as failed:  # a TLS hello to plain HTTP
                await bootstrap(f"https://127.0.0.1:{plain_port}/api/v1", CREDENTIAL, DEVICE)
        assert "/agent-daemon/bootstrap failed: TLS failed (" in str(failed.value)
        assert CREDENTIAL not in str(failed.value)

    asyncio.run(main())


def test_the_daemon_says_when_it_connects_and_when_it_reconnects(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        clock = [0.0]
        async with ScriptedCore(DEVICE, CREDENTIAL, VERSION, Signal()) as core:
            url = core.core_url
            daemon = _daemon(core, clock)
            task = asyncio.create_task(daemon.run())
            peer = await core.next_peer()
            await peer.first_heartbeat()
            connected = [r.getMessage() for r in caplog.records if "connected to" in r.getMessage()]
            assert connected == [f"runtime connected to core at {url} as device {DEVICE}"]
            # Core goes away for two attempts; each refused bootstrap takes 4 s.
            outage = iter([True, True, False])

            def restarting() -> bool:
                clock[0] += 4.0
                return next(outage, False)

            core.unavailable = restarting
            clock[0] = 10.0
            await peer.close(1011)
            await (await core.next_peer()).first_heartbeat()
            await daemon.stop()
            await asyncio.wait_for(task, WAIT)
        lines = [r for r in caplog.records if r.name == "runtime.daemon"]
        reconnected = [r for r in lines if "reconnected" in r.getMessage()]
        assert [(r.levelname, r.getMessage()) for r in reconnected] == [
            (
                "INFO",
                f"runtime reconnected to core at {url} as device {DEVICE} after 2 "
                "failed attempts, 12.0 s without a connection",
            )
        ]
        assert not [r for r in caplog.records if CREDENTIAL in r.getMessage()]

    with caplog.at_level(logging.INFO, logger="runtime.daemon"):
        asyncio.run(main())


def test_a_revoked_or_refused_device_says_what_the_operator_must_do(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        async with ScriptedCore(DEVICE, CREDENTIAL, VERSION, Signal()) as core:
            url = core.core_url
            task = asyncio.create_task(_daemon(core).run())
            peer = await core.next_peer()
            await peer.first_heartbeat()
            await peer.close(4001, "device_revoked")
            with pytest.raises(PermanentError) as revoked:
                await asyncio.wait_for(task, WAIT)
            assert str(revoked.value) == (
                f"core at {url} revoked device {DEVICE}; a new credential comes from "
                "`corebox devices create`"
            )
            # Reconnecting with it, Core refuses the credential as any other it does not know.
            core.credential = "another"
            with pytest.raises(PermanentError) as refused:
                await asyncio.wait_for(_daemon(core).run(), WAIT)
            assert refused.value.status == 401
            assert str(refused.value) == (
                f"core at {url} refused device {DEVICE} (bootstrap refused with HTTP 401): "
                "Core has no device with that id and credential; check the credential file "
                "and the device id; a revoked device needs a new credential from "
                "`corebox devices create`"
            )
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert errors == [
            f"runtime {revoked.value}; not reconnecting",
            f"runtime {refused.value}; not reconnecting",
        ]
        assert not [r for r in caplog.records if CREDENTIAL in r.getMessage()]

    with caplog.at_level(logging.INFO, logger="runtime.daemon"):
        asyncio.run(main())


@pytest.mark.parametrize("heartbeat", ["soon", 1.5, 0, -3, True, [30]])
def test_a_bootstrap_answer_with_an_unusable_heartbeat_is_a_transient_failure(
    heartbeat: object,
) -> None:
    """Only a broken or hostile Core sends one; the daemon says so and asks again, where
    it ended in a traceback."""
    with pytest.raises(TransientError) as failed:
        bootstrap_info({"device_id": DEVICE, "heartbeat_seconds": heartbeat}, "http://core")
    assert "heartbeat_seconds" in str(failed.value)
    told = bootstrap_info({"device_id": DEVICE, "heartbeat_seconds": 7}, "http://core")
    assert told.heartbeat_seconds == 7
    assert bootstrap_info({"device_id": DEVICE}, "http://core").heartbeat_seconds > 0

"""Wire throughput (a script; pytest does not collect it).

Frames per second through the real gateway and the real dispatcher for a streaming run
(`/stream N`: one-character deltas, each a `delta` frame of about 16 payload bytes),
against a bare websockets echo over loopback measured in the same run. The Core side
here is the real gateway with a Run subscription and no projection into storage, so the
figure is the protocol path alone; bench_durable.py measures the durable path.
"""

from __future__ import annotations

import asyncio
import hashlib
import socket
import sys
import time
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from allinone.core.gateway.registry import Registry  # noqa: E402
from allinone.core.gateway.server import Gateway  # noqa: E402
from runtime.daemon import Daemon  # noqa: E402
from runtime.harness.registry import HarnessRegistry  # noqa: E402
from runtime.harness.scripted import ScriptedHarness  # noqa: E402
from runtime.proto import execution as wire  # noqa: E402
from runtime.proto.inputs import InputText, Message  # noqa: E402

FRAMES = 20_000
CREDENTIAL = "bench-credential"


def free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


async def protocol_path() -> float:
    registry = Registry()
    digest = hashlib.sha256(CREDENTIAL.encode()).hexdigest()

    async def lookup(device_id: str) -> str | None:
        return digest if device_id == "bench" else None

    counter = iter(range(1, 10**9))
    sock = free_socket()
    port = sock.getsockname()[1]
    gateway = Gateway(
        registry,
        lookup,
        lambda p: f"{p}_{next(counter)}",
        15,
        lambda: f"ws://127.0.0.1:{port}/api/v1/agent-daemon/ws",
    )
    server = uvicorn.Server(
        uvicorn.Config(
            Starlette(routes=gateway.routes()),
            log_config=None,
            access_log=False,
            lifespan="off",
            http=H11Protocol,
            ws=WebSocketsSansIOProtocol,
            ws_ping_interval=None,
        )
    )
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    harnesses = HarnessRegistry()
    harnesses.register(ScriptedHarness())
    daemon = Daemon(f"http://127.0.0.1:{port}/api/v1", "bench", CREDENTIAL, harnesses, "bench")
    running = asyncio.create_task(daemon.run())
    while (connection := registry.select("scripted", ["streaming"])) is None:
        await registry.changed.wait()
    prep = connection.subscribe_preparation("prep")
    config = wire.ExecutionConfiguration(
        agent_kind="scripted",
        agent_options=wire.AgentOptions(model="scripted"),
        execution_controls=wire.ExecutionControls(
            web_search="disabled", text_verbosity="medium", disable_programmatic_tool_calling=True
        ),
        observe_messages=True,
        disable_execution_environment=True,
    )
    await connection.send(
        "execution_prepare", "prep", wire.ExecutionPrepare(session_id="s", configuration=config)
    )
    status = await prep.next(10)
    while status.state != "ready":
        status = await prep.next(10)
    run = connection.subscribe_run("run")
    started = time.perf_counter()
    await connection.send(
        "execution_start",
        "prep",
        wire.ExecutionStart(
            executor_id=status.executor_id,
            handle=status.handle,
            run_id="run",
            input=[Message(content=[InputText(text=f"/stream {FRAMES}")])],
        ),
    )
    deltas = 0
    while True:
        frame = await run.next(60)
        if frame is None or frame.type == "done":
            break
        deltas += frame.type == "delta"
    elapsed = time.perf_counter() - started
    await daemon.stop()
    running.cancel()
    server.should_exit = True
    await serving
    return deltas / elapsed


async def bare_echo() -> float:
    async def echo(ws):  # type: ignore[no-untyped-def]
        async for message in ws:
            await ws.send(message)

    async with serve(echo, "127.0.0.1", 0, compression=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}", compression=None) as ws:
            payload = '{"item_id":"m","delta":"x","sequence":1}'

            async def sender() -> None:
                for _ in range(FRAMES):
                    await ws.send(payload)

            started = time.perf_counter()
            sending = asyncio.create_task(sender())
            for _ in range(FRAMES):
                await ws.recv()
            await sending
            return FRAMES / (time.perf_counter() - started)


def main() -> int:
    echo = asyncio.run(bare_echo())
    path = asyncio.run(protocol_path())
    print("corebox wire benchmark")
    print(f"  delta frames/s through gateway + dispatcher: {path:,.0f}")
    print(f"  bare websockets echo frames/s (same size):   {echo:,.0f}")
    print(f"  ratio: {path / echo:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

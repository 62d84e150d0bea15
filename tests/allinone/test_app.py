"""The composition root's stop: the real server, stopped while every component is busy,
stops within its budget, in order, and ends what was open (streams, set-up commands)."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from typing import Any

from openai import OpenAI

from allinone.app import SHUTDOWN_BUDGET_SECONDS, App, Started
from allinone.config import Config
from tests.conftest import API_KEY
from tests.support.sdk import sdk_client

WAIT = 30.0
BUSY_TURNS = 2
NEW_SESSION: dict[str, Any] = {
    "type": "new_session",
    "agent": {"model": "scripted"},
    "environment": {"type": "none"},
    "input": [{"role": "user", "content": [{"type": "input_text", "text": "tick"}]}],
}


class BusyTurn:
    """A streamed turn whose scripted harness hangs after its first item: the turn is
    running, the Runtime executing it and the SSE stream open until the server stops."""

    def __init__(self, client: OpenAI) -> None:
        self._client = client
        self.running = threading.Event()
        self.events: list[str] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        stream = self._client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "none"},
            input="/think busy\n/hang",
            stream=True,
        )
        try:
            for event in stream:
                self.events.append(event.type)
                if event.type == "agent.session.turn.item.done":
                    self.running.set()
        except Exception as exc:  # the server going away may end the stream abruptly
            self.events.append(f"ended: {type(exc).__name__}")


def _accept(listener: socket.socket) -> socket.socket:
    listener.settimeout(WAIT)
    try:
        caller, _ = listener.accept()
    except TimeoutError:
        raise AssertionError("the set-up command never started") from None
    return caller


async def _busy_stop(data_dir: Path) -> float:
    listener = socket.create_server(("127.0.0.1", 0))
    # The set-up command runs confined to its workspace: it signals over loopback.
    setup = (
        "python3 -c 'import socket, time; "
        f'socket.create_connection(("127.0.0.1", {listener.getsockname()[1]})); '
        "time.sleep(120)'"
    )
    config = Config(
        host="127.0.0.1", port=0, data_dir=data_dir, log_level="warning", api_key=API_KEY
    )
    started: asyncio.Future[Started] = asyncio.get_running_loop().create_future()
    app = App(config, on_started=started.set_result)
    serving = asyncio.create_task(app.run())
    await asyncio.wait({started, serving}, return_when=asyncio.FIRST_COMPLETED)
    if serving.done():
        await serving
    client = sdk_client(
        base_url=f"http://127.0.0.1:{started.result().port}/v1",
        api_key=API_KEY,
        max_retries=0,
        timeout=WAIT,
    )
    try:
        await asyncio.to_thread(
            client.beta.agents.automations.create,
            type="periodic",
            name="every minute",
            expression="* * * * *",
            timezone="UTC",
            target=NEW_SESSION,  # type: ignore[arg-type]
        )
        await asyncio.to_thread(
            client.beta.agents.environments.create,
            environment={"type": "openai_hosted", "setup_commands": [{"command": setup}]},
        )
        setup_caller = await asyncio.to_thread(_accept, listener)
        turns = [BusyTurn(client) for _ in range(BUSY_TURNS)]
        for turn in turns:
            assert await asyncio.to_thread(turn.running.wait, WAIT), turn.events
        loop = asyncio.get_running_loop()
        stopping = loop.time()
        app.request_stop()
        # A generous outer bound only so a broken stop fails instead of hanging the run.
        await asyncio.wait_for(serving, SHUTDOWN_BUDGET_SECONDS * 3)
        elapsed = loop.time() - stopping
        for turn in turns:
            await asyncio.to_thread(turn.thread.join, WAIT)
            assert not turn.thread.is_alive(), "an SSE stream stayed open after the stop"
        # The set-up command did not outlive the stop: its end of the connection closed.
        setup_caller.settimeout(WAIT)
        with setup_caller:
            assert await asyncio.to_thread(setup_caller.recv, 1) == b""
        return elapsed
    finally:
        listener.close()
        client.close()
        if not serving.done():
            app.request_stop()
            await asyncio.wait_for(serving, WAIT)


def test_stopping_while_every_component_is_busy_stays_within_the_budget(
    tmp_path: Path,
) -> None:
    elapsed = asyncio.run(_busy_stop(tmp_path / "data"))
    assert elapsed < SHUTDOWN_BUDGET_SECONDS, f"stopped in {elapsed:.1f}s"

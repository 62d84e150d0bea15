"""The real Core on a loopback port, for the Core side of the scenarios that run a turn.

`allinone.app.App` is the composition root exactly as `corebox serve --no-local-runtime`
runs it (storage on a SQLite file, admission, orchestrator, gateway, projector, the
public API), in this process so that the test can pass shorter `Timers` and read the
device registry. The fixture's device credential is stored before Core starts; the default
project's API key is `tests.conftest.API_KEY`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from allinone.app import DATABASE_FILE, App, Started
from allinone.config import Config
from allinone.core.orchestration.timers import Timers
from storage.database import Database
from tests.conftest import API_KEY
from tests.contract.core_gateway import WAIT_SECONDS, RegistryView, register_device

STOP_SECONDS = 15.0


class CoreApp(RegistryView):
    def __init__(self, data_dir: Path, device_id: str, credential: str, timers: Timers) -> None:
        self._data_dir = data_dir
        self.device_id = device_id
        self._credential = credential
        self._timers = timers
        self._app: App | None = None
        self._task: asyncio.Task[None] | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> CoreApp:
        self._data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        db = await Database.open(self._data_dir / DATABASE_FILE)
        try:
            await register_device(db, self.device_id, self._credential)
        finally:
            await db.close()
        loop = asyncio.get_running_loop()
        started: asyncio.Future[Started] = loop.create_future()
        config = Config(
            host="127.0.0.1", port=0, data_dir=self._data_dir, log_level="warning", api_key=API_KEY
        )
        self._app = App(
            config, on_started=started.set_result, local_runtime=False, timers=self._timers
        )
        self._task = asyncio.create_task(self._app.run(), name="core")
        waiters: set[asyncio.Future[Any]] = {started, self._task}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if not started.done():
            await self._task  # raises why Core did not start
            raise AssertionError("Core stopped during start-up")
        announced = started.result()
        assert announced.registry is not None
        self.registry = announced.registry
        self.port = announced.port
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._app is not None and self._task is not None:
            self._app.request_stop()
            await asyncio.wait_for(self._task, STOP_SECONDS)


__all__ = ["WAIT_SECONDS", "CoreApp"]

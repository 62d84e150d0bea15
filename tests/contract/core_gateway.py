"""The real Core gateway on a loopback port, for the Core side of the wire scenarios.

The Starlette app holds the real `Gateway` routes (bootstrap and WebSocket), served by
uvicorn exactly as `allinone/app.py` configures it, with device credentials stored as
SHA-256 digests in a real SQLite database. The test drives the gateway's own API
(`Connection.send`, subscriptions, receipt waiters) the way the orchestrator does.
It never imports the Runtime's implementation.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import socket
from collections.abc import Callable, Generator
from pathlib import Path

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from allinone.core.api.app import build_app
from allinone.core.gateway.connection import Connection
from allinone.core.gateway.refusals import RefusalLog
from allinone.core.gateway.registry import Registry
from allinone.core.gateway.server import Gateway
from allinone.core.ids import Clock, Ids
from runtime.proto import limits
from storage import tenancy
from storage.database import Database, Tx

WAIT_SECONDS = 5.0


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling, as in the composition root."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class RegistryView:
    """What a Core side reads of Core's device registry: the device's open connection and
    the registry's change events."""

    registry: Registry
    device_id: str

    def connection(self) -> Connection | None:
        """The device's open connection, if it has one."""
        return next(
            (c for c in self.registry if c.device_id == self.device_id and not c.closed.is_set()),
            None,
        )

    async def until(self, condition: Callable[[], bool], timeout: float = WAIT_SECONDS) -> bool:
        """Wait on the registry's change events until `condition()` holds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            event = self.registry.changed
            if condition():
                return True
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)


async def register_device(db: Database, device_id: str, credential: str) -> None:
    """Store the device's credential as its SHA-256 digest, as `devices create` does."""
    digest = hashlib.sha256(credential.encode()).hexdigest()

    async def device(tx: Tx) -> None:
        await tenancy.upsert_device(tx, device_id, "contract runtime", digest, 1)

    await db.write(device)


class GatewayHost(RegistryView):
    def __init__(
        self,
        data_dir: Path,
        device_id: str,
        credential: str,
        refusals: RefusalLog | None = None,
        read_timeout: float = limits.READ_TIMEOUT_SECONDS,
    ) -> None:
        self._refusals = refusals
        self._read_timeout = read_timeout
        self._data_dir = data_dir
        self.device_id = device_id
        self._credential = credential
        self.registry = Registry()
        self._db: Database | None = None
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/api/v1/agent-daemon/ws"

    async def __aenter__(self) -> GatewayHost:
        self._data_dir.mkdir(parents=True, exist_ok=True)
        db = self._db = await Database.open(self._data_dir / "core.db")
        await register_device(db, self.device_id, self._credential)

        async def device_digest(device_id: str) -> str | None:
            return await db.read(lambda r: tenancy.device_digest(r, device_id))

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)  # listening before uvicorn starts: clients queue in the backlog
        self.port = sock.getsockname()[1]
        gateway = Gateway(
            self.registry,
            device_digest,
            Ids(Clock()).new,
            3600,
            lambda: self.ws_url,
            refusals=self._refusals,
            read_timeout=self._read_timeout,
        )
        self._server = _Server(
            uvicorn.Config(
                build_app(list(gateway.routes())),
                log_config=None,
                access_log=False,
                lifespan="off",
                http=H11Protocol,
                ws=WebSocketsSansIOProtocol,
                ws_max_size=limits.MAX_FRAME_BYTES,
                ws_ping_interval=None,
                timeout_graceful_shutdown=1,
            )
        )
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name="gateway")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await asyncio.wait_for(self._task, WAIT_SECONDS * 2)
        if self._db is not None:
            await self._db.close()

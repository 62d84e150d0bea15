"""The composition root: builds storage, the scheduler, Core, the uvicorn server and the
in-process Runtime, starts them in that order and shuts them down in reverse within the
shutdown budget. Nothing else in the code base wires components together.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Callable, Generator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import uvicorn
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from starlette.routing import BaseRoute
from starlette.types import ASGIApp

from allinone import __version__, clustering, doctor
from allinone.config import Config, local_base_url
from allinone.core.agent_versions import Deployments
from allinone.core.api.agent_versions import AgentVersionsApi
from allinone.core.api.agents import AgentsApi
from allinone.core.api.app import build_app
from allinone.core.api.archive import ArchiveApi
from allinone.core.api.auth import Keys
from allinone.core.api.automations import AutomationsApi
from allinone.core.api.bundles import BundlesApi
from allinone.core.api.cluster import ClusterApi
from allinone.core.api.commands import CommandsApi
from allinone.core.api.comms_owner import comms_routes
from allinone.core.api.console import ConsoleApi
from allinone.core.api.devices import DevicesApi
from allinone.core.api.drain import DrainApi
from allinone.core.api.environments import EnvironmentsApi
from allinone.core.api.files import FilesApi
from allinone.core.api.forks import ForksApi
from allinone.core.api.harnesses import HarnessesApi
from allinone.core.api.health import Health
from allinone.core.api.overlays import OverlaysApi
from allinone.core.api.projects import ProjectsApi
from allinone.core.api.protocol import MAX_HEADER_BYTES, http_protocol
from allinone.core.api.sessions import SessionsApi
from allinone.core.api.skills import SkillsApi
from allinone.core.api.subagents import SubagentsApi
from allinone.core.api.templates import TemplatesApi
from allinone.core.api.traces import TracesApi
from allinone.core.api.vaults import VaultsApi
from allinone.core.api.ws_protocol import websocket_protocol
from allinone.core.archive import Archive
from allinone.core.automations import Automations
from allinone.core.cluster.membership import Membership
from allinone.core.cluster.signals import TurnSignals
from allinone.core.comms.service import Comms
from allinone.core.control.commands import Commands
from allinone.core.control.commands import Signals as CommandSignals
from allinone.core.control.forks import Forks
from allinone.core.control.kill_switch import kill_switch_commands, turn_canceller
from allinone.core.control.rewinds import Rewinds
from allinone.core.environments import Environments
from allinone.core.file_bodies import FileBodies
from allinone.core.gateway.preparations import Preparations
from allinone.core.gateway.registry import Registry
from allinone.core.gateway.server import Gateway
from allinone.core.host_grants import HostGrants
from allinone.core.hub import Hub
from allinone.core.ids import Clock, Ids
from allinone.core.model_providers import DefaultProvider, ModelProviders
from allinone.core.orchestration.credentials import RunCredentials
from allinone.core.orchestration.orchestrator import Orchestrator
from allinone.core.orchestration.outcomes import Outcomes
from allinone.core.orchestration.projector import Projector
from allinone.core.orchestration.recovery import Recovery
from allinone.core.orchestration.timers import PRODUCTION, Timers
from allinone.core.overlays import Overlays
from allinone.core.recorder import Recorder
from allinone.core.sealing import Sealer
from allinone.core.sessions.admission import Admission
from allinone.core.skills.catalog import Catalog
from allinone.core.tasks import cancel_and_wait
from allinone.core.vault_secrets import VaultSecrets
from allinone.credentials import (
    LOCAL_DEVICE_ID,
    SecretKeyError,
    ensure_core_key,
    ensure_default_project,
    ensure_vault_key,
    issue_device_credential,
    read_core_key,
)
from allinone.datadir.collection import BLOBS_DIR, SNAPSHOTS_DIR, WORKSPACES_DIR, Retention
from allinone.lifecycle import Lifecycle
from allinone.redaction import Redactor
from allinone.startup import (
    DATABASE_FILE,
    DatabaseLock,
    StartupError,
    Warmup,
    bind,
    prepare_data_dir,
    start_server,
    together,
    when_ready,
)
from runtime import log_context as runtime_log_context
from runtime.coalesce import Coalesced
from runtime.confinement import Confinement, Sandbox, probe
from runtime.daemon import Daemon
from runtime.harness.builtin.adapter import BuiltinHarness
from runtime.harness.builtin.timeouts import ModelTimeouts
from runtime.harness.claude_code.adapter import ClaudeCodeHarness
from runtime.harness.codex.adapter import CodexHarness
from runtime.harness.codex.cli import probe as probe_codex
from runtime.harness.registry import HarnessRegistry
from runtime.harness.scripted import ScriptedHarness
from runtime.proto import limits
from runtime.proto.capabilities import SupportedAgentKind
from runtime.snapshots import Snapshots
from runtime.transport import PermanentError
from runtime.workspaces import Workspaces
from storage import tenancy, urls
from storage.blobs import BlobStore
from storage.database import Database
from storage.errors import StorageError

log = logging.getLogger(__name__)

SHUTDOWN_BUDGET_SECONDS = 10.0
HARNESSES_DIR = "harnesses"  # private state of CLI harnesses (the Codex CLI's home)


class _Server(uvicorn.Server):
    """uvicorn's server without its own signal handling (the App owns the signals), which
    announces with `listening` when it serves."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.listening.set()


@dataclass
class Started:
    """What a running App exposes (tests and the CLI read it)."""

    port: int
    api_key: str | None
    key_file: Path | None
    registry: Registry | None = None  # the device registry, for contract tests
    harnesses: tuple[SupportedAgentKind, ...] = ()  # what the in-process Runtime offers
    default_archived: bool = False  # the default project is archived: no key to offer
    db: Database | None = None  # the server's database, for tests that make it fail


@dataclass(frozen=True)
class Opened:
    """What start-up opened and read before anything is built: the listening socket, the
    database, the data directory's keys and credentials, the host's confinement and the
    in-process Runtime's harnesses (each CLI harness probed once)."""

    sock: socket.socket
    port: int
    db: Database
    api_key: str | None
    key_file: Path | None
    vault_key: bytes
    confinement: Confinement
    runtime_credential: str | None
    runtime_device: str = LOCAL_DEVICE_ID
    harnesses: HarnessRegistry | None = None
    default_archived: bool = False


@dataclass(frozen=True)
class Parts:
    """Every long-lived component, built and wired without I/O by `build`."""

    db: Database
    scheduler: AsyncIOScheduler
    hub: Hub
    grants: HostGrants
    environments: Environments
    orchestrator: Orchestrator
    outcomes: Outcomes
    automations: Automations
    comms: Comms
    server: _Server
    daemon: Daemon | None
    health: Health
    registry: Registry
    retention: Retention
    seat: clustering.Seat


@dataclass(frozen=True)
class _Domain:
    """Core's domain objects: what the API routes and the parts are built from."""

    config: Config
    opened: Opened
    clock: Clock
    ids: Ids
    hub: Hub
    registry: Registry
    sealer: Sealer
    grants: HostGrants
    providers: ModelProviders
    environments: Environments
    admission: Admission
    automations: Automations
    comms: Comms
    scheduler: AsyncIOScheduler
    health: Health
    ws_url: str
    skills: Catalog
    commands: Commands
    drain: Callable[[float], bool]
    overlays: Overlays
    membership: Membership


def build(config: Config, opened: Opened, timers: Timers, redactor: Redactor) -> Parts:
    """The component graph: constructors only, collaborators passed in. Nothing here
    opens, reads or starts anything; `App` starts the parts in order."""
    clock = Clock()
    ids = Ids(clock)
    db = opened.db
    hub, registry, seat = clustering.seat(db, ids, clock)
    recorder = Recorder(hub, ids, clock)
    projector = Projector(recorder, ids, clock)
    outcomes = Outcomes(db, recorder, projector, clock, ids)
    ws_url = _runtime_ws_url(config, opened.port)
    sealer = Sealer(opened.vault_key)
    grants = HostGrants(
        db, clock, config.workspace_roots, config.data_dir, opened.confinement.describe()
    )
    preparations = Preparations(ids.new)  # shared by turns and workspace operations
    skills = Catalog(db, ids, clock)
    environments = _environments(
        config, db, registry, ids, clock, recorder, ws_url, sealer, grants, preparations, skills,
        seat.membership,
    )  # fmt: skip
    reveal = redactor.add  # secrets opened for runs are kept out of the log
    providers = ModelProviders(sealer, default_provider(config), reveal)
    credentials = RunCredentials(providers, VaultSecrets(db, sealer, reveal))
    orchestrator = Orchestrator(
        db, registry, projector, outcomes, ids, clock, environments, credentials,
        timers=timers, preparations=preparations, membership=seat.membership,
    )  # fmt: skip
    relayed = clustering.relay(seat, orchestrator, Recovery(db, outcomes))
    admission = _admission(
        config, db, recorder, ids, clock, relayed, environments, providers, registry.offers
    )
    commands, overlays = _controls(db, recorder, ids, clock, relayed, admission)
    scheduler = AsyncIOScheduler()
    automations = Automations(db, admission, scheduler, sealer, ids, clock)
    comms = Comms(db, ids, clock)
    health = _health(config, opened, registry, scheduler, clock, orchestrator)
    domain = _Domain(
        config, opened, clock, ids, hub, registry, sealer, grants, providers,
        environments, admission, automations, comms, scheduler, health, ws_url, skills,
        commands, orchestrator.start_drain, overlays, seat.membership,
    )  # fmt: skip
    return Parts(
        db=db,
        scheduler=scheduler,
        hub=hub,
        grants=grants,
        environments=environments,
        orchestrator=orchestrator,
        outcomes=outcomes,
        automations=automations,
        comms=comms,
        server=_http_server(domain),
        daemon=_local_daemon(config, opened, grants),
        health=health,
        registry=registry,
        retention=Retention(db, config.data_dir, clock.now, config.retention_seconds),
        seat=seat,
    )


def _environments(
    config: Config,
    db: Database,
    registry: Registry,
    ids: Ids,
    clock: Clock,
    recorder: Recorder,
    ws_url: str,
    sealer: Sealer,
    grants: HostGrants,
    preparations: Preparations,
    skills: Catalog,
    membership: Membership,
) -> Environments:
    """Managed environments, with the blob store that holds artifact bodies and, on
    SQLite, uploaded file bodies (PostgreSQL keeps those itself, for every process)."""
    blobs = BlobStore(config.data_dir / BLOBS_DIR)
    bodies = FileBodies(db, blobs if db.path is not None else None, clock.now)
    return Environments(
        db, registry, ids, clock, remote_url=ws_url, sealer=sealer, grants=grants,
        preparations=preparations, skills=skills, blobs=blobs, bodies=bodies, recorder=recorder,
        membership=membership,
    )  # fmt: skip


def _http_server(domain: _Domain) -> _Server:
    """The HTTP server: every route, each under its path's key policy, and the console."""
    app = build_app(_routes(domain), keys=Keys(domain.opened.db), pages=ConsoleApi().routes())
    return _Server(_server_config(app, domain.config.log_level))


def _admission(
    config: Config,
    db: Database,
    recorder: Recorder,
    ids: Ids,
    clock: Clock,
    relayed: TurnSignals,
    environments: Environments,
    providers: ModelProviders,
    offers: Callable[[str], bool],
) -> Admission:
    """Admission, whose signals reach the turn queue of every Core process."""
    return Admission(
        db, recorder, ids, clock, relayed.wake, relayed.cancel, relayed.input, environments,
        providers, offers, config.prices,
    )  # fmt: skip


def _controls(
    db: Database,
    recorder: Recorder,
    ids: Ids,
    clock: Clock,
    relayed: TurnSignals,
    admission: Admission,
) -> tuple[Commands, Overlays]:
    """Run control (pause, resume, cancel as commands) and the safety overlays, whose
    kill switches act on turns through it."""
    signals = CommandSignals(relayed.wake, relayed.pause, relayed.cancel)
    commands = Commands(db, recorder, ids, clock, signals)
    overlays = Overlays(
        db,
        ids,
        clock,
        turn_canceller(admission),
        relayed.wake,
        kill_switch_commands(commands, "pause"),
        kill_switch_commands(commands, "resume"),
    )
    return commands, overlays


def _health(
    config: Config,
    opened: Opened,
    registry: Registry,
    scheduler: AsyncIOScheduler,
    clock: Clock,
    orchestrator: Orchestrator,
) -> Health:
    source = str(config.config_file) if config.config_file else "defaults"
    return Health(
        opened.db,
        registry,
        lambda: bool(scheduler.running),
        clock,
        {"data_dir": str(config.data_dir), "port": opened.port, "source": source},
        confinement=opened.confinement.describe(),
        draining=lambda: orchestrator.draining,
        setup=partial(_setup_evidence, config),
    )


def _setup_evidence(config: Config) -> tuple[bool, list[dict[str, Any]]]:
    checks = doctor.serving_checks(config)
    return doctor.passed(checks), [check.to_dict() for check in checks]


def _routes(d: _Domain) -> list[BaseRoute]:
    """Every HTTP and WebSocket route, in any order (`build_app` makes a literal path
    segment win over a parameter)."""
    db, ids, clock, registry, ws_url = d.opened.db, d.ids, d.clock, d.registry, d.ws_url

    async def device_digest(device_id: str) -> str | None:
        return await db.read(lambda r: tenancy.device_digest(r, device_id))

    gateway = Gateway(
        registry, device_digest, ids.new, limits.HEARTBEAT_SECONDS_DEFAULT, lambda: ws_url,
        local_device=LOCAL_DEVICE_ID,
    )  # fmt: skip
    return [
        *d.health.routes(),
        *gateway.routes(),
        *ProjectsApi(db, ids, clock, d.grants, d.hub).routes(),
        *DevicesApi(db, ids, clock, registry, d.opened.runtime_device).routes(),
        *TemplatesApi(db, d.sealer, ids, clock).routes(),
        *EnvironmentsApi(db, d.environments, ids, clock).routes(),
        *FilesApi(db, d.environments.bodies, ids, clock).routes(),
        *SessionsApi(db, d.admission, d.hub, ids).routes(),
        *TracesApi(db).routes(),
        *SubagentsApi(db).routes(),
        *AutomationsApi(db, d.automations, ids, clock, d.grants).routes(),
        *VaultsApi(db, VaultSecrets(db, d.sealer), ids, clock).routes(),
        *comms_routes(d.comms, db),
        *HarnessesApi(db, registry).routes(),
        *AgentsApi(db, ids, clock, d.providers).routes(),
        *SkillsApi(db, d.skills).routes(),
        *ForksApi(
            db, Forks(db, Recorder(d.hub, ids, clock), ids, clock), Rewinds(db, ids, clock)
        ).routes(),
        *ArchiveApi(Archive(db, clock)).routes(),
        *BundlesApi(d.config.data_dir).routes(),
        *CommandsApi(d.commands).routes(),
        *DrainApi(d.drain).routes(),
        *ClusterApi(d.opened.db, d.membership).routes(),
        *AgentVersionsApi(db, Deployments(db, ids, clock)).routes(),
        *OverlaysApi(db, d.overlays).routes(),
    ]


def _runtime_ws_url(config: Config, port: int) -> str:
    """Where Runtimes connect: the loopback address for the in-process one, the public
    URL for Runtimes elsewhere when one is configured (never a loopback address)."""
    if config.public_url:
        return "ws" + config.public_url.removeprefix("http") + "/api/v1/agent-daemon/ws"
    return "ws" + local_base_url(config.host, port).removeprefix("http") + "/api/v1/agent-daemon/ws"


def _server_config(app: ASGIApp, log_level: str) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        lifespan="off",
        http=http_protocol(),
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        ws=websocket_protocol(Coalesced),  # one socket write per loop step
        ws_max_size=limits.MAX_FRAME_BYTES,
        ws_ping_interval=None,
        timeout_graceful_shutdown=2,
        log_level=log_level,
    )


def _local_daemon(config: Config, opened: Opened, grants: HostGrants) -> Daemon | None:
    """The in-process Runtime, or None when Core serves without one."""
    if opened.runtime_credential is None:
        return None
    return Daemon(
        local_base_url(config.host, opened.port) + "/api/v1",
        opened.runtime_device,
        opened.runtime_credential,
        opened.harnesses
        or runtime_harnesses(config.data_dir / HARNESSES_DIR, model_timeouts(config)),
        __version__,
        workspaces=Workspaces(
            config.data_dir / WORKSPACES_DIR,
            grants.all_roots,
            denied=(config.data_dir,),
            # Core allows a project's commands unconfined only when it is trusted.
            sandbox=Sandbox(opened.confinement, (config.data_dir,), unconfined_allowed=True),
            snapshots=Snapshots(config.data_dir / SNAPSHOTS_DIR),
        ),
        announce_level=logging.DEBUG,  # it connects at every start, as the gateway says
    )


class App:
    """`corebox serve`: opens the data directory, builds the parts, starts them in order
    and stops them in reverse (see `Lifecycle`) within SHUTDOWN_BUDGET_SECONDS.

    Start-up order, and so the reverse shutdown order: listening socket, database,
    scheduler, HTTP server (and the event hub its streams wait on), in-process Runtime,
    environment set-ups, orchestrator, automations, periodic jobs. Stopping therefore
    stops firing schedules, then stops claiming turns and settles or cancels the running
    ones, then cancels environment set-ups, closes the Runtime, ends open streams and the
    server, the scheduler, the database and the socket."""

    def __init__(
        self,
        config: Config,
        *,
        on_started: Callable[[Started], None] | None = None,
        local_runtime: bool = True,
        timers: Timers = PRODUCTION,
        on_ready: Callable[[Started], None] | None = None,
        announced: bool = False,
        warmup: Warmup | None = None,
    ) -> None:
        """`on_started` is called once the server listens; `on_ready` once `/readyz`
        would answer 200 (a Runtime has connected and declared), at most once.
        `announced` says `on_started` shows the start to a person (the banner), so the
        log's own start line is a debug line.
        `local_runtime=False` serves Core without the in-process Runtime: turns wait
        (and /readyz reports the runtime check missing) until a remote daemon connects.
        `timers` are the seed's protocol timers; only tests pass shorter ones.
        `warmup`: the data directory's preparation already started (the CLI starts it
        before importing this module); start-up waits for it before opening the data
        directory itself."""
        self._warmup = warmup
        self._timers = timers
        self._on_ready = on_ready
        self.config = config
        self._on_started = on_started
        self._local_runtime = local_runtime
        self._announced = announced
        self._stop = asyncio.Event()
        self._redactor = Redactor()

    def request_stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        """Start, serve until SIGINT/SIGTERM or `request_stop()`, then stop in order.

        The signal handlers are installed first, so a signal that arrives during start-up
        is honoured as an orderly stop once start-up completes."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._stop.set)
        redactor = self._redactor
        redactor.add(self.config.api_key)
        redactor.add(self.config.model_api_key)
        redactor.install()
        turn_fields = runtime_log_context.Fields()  # the Runtime's lines name their turn
        turn_fields.install()
        try:
            async with Lifecycle(SHUTDOWN_BUDGET_SECONDS) as life:
                opened = await self._open(life)
                parts = build(self.config, opened, self._timers, self._redactor)
                vital = await self._start(life, parts, opened.sock)
                log.log(
                    logging.DEBUG if self._announced else logging.INFO,
                    "corebox %s serving on http://%s:%d/v1",
                    __version__,
                    self.config.host,
                    opened.port,
                )
                offered = opened.harnesses.supported_kinds() if opened.harnesses else []
                started = Started(
                    opened.port,
                    opened.api_key,
                    opened.key_file,
                    parts.registry,
                    tuple(offered),
                    opened.default_archived,
                    parts.db,
                )
                if self._on_started is not None:
                    self._on_started(started)
                if self._on_ready is not None:
                    announce = partial(self._on_ready, started)
                    life.own(asyncio.create_task(when_ready(parts, announce), name="ready"))
                await self._until_stopped(vital)
                log.info("corebox shutting down")
        finally:
            turn_fields.uninstall()
            redactor.uninstall()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)

    async def _open(self, life: Lifecycle) -> Opened:
        """Lock an SQLite database for this process, bind, open the database and read or
        create the data directory's keys."""
        config = self.config
        if self._warmup is not None:
            await asyncio.to_thread(self._warmup.wait)
        prepare_data_dir(config.data_dir)
        target = config.database_url or config.data_dir / DATABASE_FILE
        if not urls.is_url(target):
            lock = self._warmup.take_lock() if self._warmup else None
            lock = lock or DatabaseLock.acquire(Path(target))
            life.on_stop_sync("database lock", lock.release)
        sock = bind(config.host, config.port)
        life.on_stop_sync("listening socket", sock.close)
        try:
            db = await Database.open(target)
        except StorageError as exc:
            raise StartupError(str(exc)) from exc
        life.on_stop("database", db.close)
        device = clustering.local_device(db, LOCAL_DEVICE_ID, sock)
        clock = Clock()
        ids = Ids(clock)
        # Independent first-start writes, made together so that they share one commit,
        # while the CLI harnesses are probed (each runs its CLI's --version) on a thread.
        first, _, vault_key, credential, harnesses = await together(
            ensure_default_project(db, ids, clock, config.data_dir, config.api_key),
            ensure_core_key(db, ids, config.data_dir),
            self._vault_key(db),
            self._device_credential(db, ids, clock, device),
            self._harnesses(),
        )
        self._redactor.add(first.api_key)
        self._redactor.add(read_core_key(config.data_dir))
        return Opened(
            sock=sock,
            port=sock.getsockname()[1],
            db=db,
            api_key=first.api_key,
            key_file=first.key_file,
            vault_key=vault_key,
            confinement=probe(),
            runtime_credential=credential,
            runtime_device=device,
            harnesses=harnesses,
            default_archived=first.archived,
        )

    async def _harnesses(self) -> HarnessRegistry | None:
        if not self._local_runtime:
            return None
        home, model = self.config.data_dir / HARNESSES_DIR, model_timeouts(self.config)
        return await asyncio.to_thread(runtime_harnesses, home, model)

    async def _vault_key(self, db: Database) -> bytes:
        try:
            return await ensure_vault_key(db, self.config.data_dir)
        except SecretKeyError as exc:
            raise StartupError(str(exc)) from exc

    async def _device_credential(
        self, db: Database, ids: Ids, clock: Clock, device: str
    ) -> str | None:
        if not self._local_runtime:
            return None
        credential = await issue_device_credential(db, ids, clock, device)
        self._redactor.add(credential)
        return credential

    async def _start(
        self, life: Lifecycle, parts: Parts, sock: socket.socket
    ) -> set[asyncio.Task[None]]:
        """Start every part in order, registering each one's stop as soon as it runs.
        Returns the tasks whose end means the process must stop (server, Runtime)."""
        await parts.grants.load()
        parts.scheduler.add_job(
            parts.db.checkpoint, "interval", minutes=5, id="wal-checkpoint", **_ONCE
        )
        parts.scheduler.start()
        life.on_stop_sync("scheduler", lambda: parts.scheduler.shutdown(wait=False))
        vital = {await start_server(life, parts.server, parts.hub, sock)}
        if parts.daemon is not None:
            daemon_task = asyncio.create_task(parts.daemon.run(), name="runtime-daemon")
            life.own(daemon_task)
            life.on_stop("runtime", parts.daemon.stop)
            vital.add(daemon_task)
        life.on_stop("environment set-ups", parts.environments.stop)
        await clustering.join(life, parts, self.request_stop)
        await parts.orchestrator.start()
        life.on_stop("orchestrator", lambda: parts.orchestrator.stop(timeout=3.0))
        await parts.automations.start()
        life.on_stop_sync("automations", parts.automations.stop)
        clustering.add_periodic_jobs(parts, self._timers)
        return vital

    async def _until_stopped(self, vital: set[asyncio.Task[None]]) -> None:
        """Serve until a stop is requested or a vital task ends on its own."""
        stop = asyncio.create_task(self._stop.wait(), name="stop-requested")
        try:
            await asyncio.wait({stop, *vital}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait(stop)


_ONCE: dict[str, Any] = {"coalesce": True, "max_instances": 1}


def host_confinement() -> dict[str, str | int]:
    """How this host can confine workspace commands (`corebox doctor` reports it)."""
    return probe().describe()


def runtime_harnesses(home: Path, model: ModelTimeouts | None = None) -> HarnessRegistry:
    """The harnesses every Runtime this build runs registers, in-process or remote.
    CLI harnesses keep their private state under `home`; each is registered whether or
    not its CLI is installed, and declares itself available only when it is, at a
    version the adapter knows. `model` bounds the builtin harness's model calls."""
    harnesses = HarnessRegistry()
    harnesses.register(ScriptedHarness())
    harnesses.register(BuiltinHarness(timeouts=model))
    harnesses.register(CodexHarness(probe_codex(), home / "codex"))
    harnesses.register(ClaudeCodeHarness())
    return harnesses


def model_timeouts(config: Config) -> ModelTimeouts:
    return ModelTimeouts(config.model_timeout_seconds, config.model_idle_timeout_seconds)


def default_provider(config: Config) -> DefaultProvider | None:
    """The deployment's default model provider (`--model-base-url`), if configured."""
    if config.model_base_url is None:
        return None
    return DefaultProvider(
        base_url=config.model_base_url,
        model=config.model or "",
        protocol=config.model_protocol,
        api_key=config.model_api_key or "",
    )


class RuntimeStopped(Exception):
    """`corebox daemon` stopped for good: Core refused or retired its device. `status` is
    the HTTP status of the refusal (401, 403, 426) or the close code (4001)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


async def run_daemon(
    core_url: str,
    device_id: str,
    credential: str,
    workspaces: Path | None = None,
    *,
    allowed_roots: tuple[Path, ...] = (),
    allow_unconfined: bool = False,
) -> None:
    """`corebox daemon`: the same Runtime as `corebox serve` runs in-process, connected to
    a Core elsewhere, until SIGINT/SIGTERM. It serves `self_hosted` workspaces only under
    `allowed_roots` and runs commands confined (unconfined only if `allow_unconfined`).
    CLI harnesses keep their private state under `~/.corebox/harnesses`.
    Raises RuntimeStopped on a permanent refusal (401, 403, 426 or close 4001); never
    reconnects after one."""
    confinement = probe()
    log.info("runtime commands confinement: %s", confinement.kind)
    snapshots = None if workspaces is None else workspaces.with_name(workspaces.name + ".snapshots")
    denied = () if workspaces is None or snapshots is None else (workspaces, snapshots)
    daemon = Daemon(
        core_url,
        device_id,
        credential,
        runtime_harnesses(Path.home() / ".corebox" / HARNESSES_DIR),
        __version__,
        workspaces=Workspaces(
            workspaces,
            allowed_roots,
            denied=denied,
            sandbox=Sandbox(confinement, denied, unconfined_allowed=allow_unconfined),
            snapshots=None if snapshots is None else Snapshots(snapshots),
        ),
    )
    uninstall = _log_filters(credential)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    running = asyncio.create_task(daemon.run(), name="runtime-daemon")
    stopping = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if running.done():
            running.result()
            return
        await asyncio.wait_for(daemon.stop(), SHUTDOWN_BUDGET_SECONDS)
        await cancel_and_wait(running)
    except PermanentError as exc:
        raise RuntimeStopped(str(exc), exc.status) from exc
    finally:
        await cancel_and_wait(stopping)
        uninstall()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


def _log_filters(credential: str) -> Callable[[], None]:
    """Keep `credential` out of the log and name the Runtime's turns in every line;
    returns what removes both filters."""
    redactor = Redactor()
    redactor.add(credential)
    redactor.install()
    turn_fields = runtime_log_context.Fields()
    turn_fields.install()

    def uninstall() -> None:
        turn_fields.uninstall()
        redactor.uninstall()

    return uninstall

"""The `corebox` command line. The only place that exits the process."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allinone import __version__, cli_help, logs
from allinone.banner import Facts, banner, machine_lines
from allinone.config import Config, ConfigError, load, server_url
from allinone.core.agents import CLI_HARNESSES
from allinone.credentials import KEY_FILE

if TYPE_CHECKING:
    from allinone.app import Started
    from allinone.startup import Warmup

# `allinone.app` (the server and the Runtime: uvicorn, starlette, the harnesses, mcp) is
# imported by the two commands that run it, inside their functions: a static import that
# PyInstaller sees, which the short-lived commands (admin, receiver, handler) do not pay.
# The other commands' modules are imported the same way (`_add_commands`, `_run`), so
# that `corebox serve` does not pay for them before it starts.


def _parser(*, serve_only: bool = False) -> argparse.ArgumentParser:
    """The command line's parser; `serve_only` registers `serve` alone, which parses and
    describes `corebox serve ...` exactly as the whole parser does."""
    parser = argparse.ArgumentParser(
        prog="corebox", description="The Agents API on your own machine."
    )
    parser.add_argument("--version", action="version", version=f"corebox {__version__}")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", title="commands"
    )
    _add_serve(commands)
    if not serve_only:
        _add_commands(commands)
    cli_help.add_examples(parser)
    return parser


def _add_serve(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="run Core, storage, scheduler and a Runtime",
        description="Serve the Agents API, the console and a Runtime on one port.",
    )
    serve.add_argument("--host", metavar="ADDRESS", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8800)")
    serve.add_argument(
        "--data-dir",
        dest="data_dir",
        metavar="DIR",
        help="where state is kept (default $XDG_DATA_HOME/corebox or ~/.local/share/corebox)",
    )
    serve.add_argument(
        "--database-url",
        dest="database_url",
        metavar="URL",
        help="keep the state in this PostgreSQL database (postgresql://...) instead of SQLite",
    )
    serve.add_argument(
        "--log-level",
        dest="log_level",
        metavar="LEVEL",
        help="critical, error, warning, info (default) or debug",
    )
    logs.add_format_flag(serve)
    serve.add_argument("--config", metavar="FILE", help="a corebox.toml file")
    _add_serve_runtime_flags(serve)


def _add_serve_runtime_flags(serve: argparse.ArgumentParser) -> None:
    """`serve`'s flags for the model, the Runtimes and supervisors."""
    serve.add_argument(
        "--model-base-url",
        dest="model_base_url",
        metavar="URL",
        help="an OpenAI-compatible server for the builtin harness (key: COREBOX_MODEL_API_KEY)",
    )
    serve.add_argument("--model", metavar="NAME", help="the model the --model-base-url server runs")
    serve.add_argument(
        "--model-protocol",
        dest="model_protocol",
        metavar="PROTOCOL",
        help="chat_completions (default) or responses",
    )
    serve.add_argument(
        "--model-timeout",
        dest="model_timeout_seconds",
        metavar="SECONDS",
        help="the longest one builtin model call may take (default 600)",
    )
    serve.add_argument(
        "--model-idle-timeout",
        dest="model_idle_timeout_seconds",
        metavar="SECONDS",
        help="the longest wait for a model server's answer or its next stream event (default 300)",
    )
    serve.add_argument(
        "--public-url",
        dest="public_url",
        metavar="URL",
        help="the address Runtimes elsewhere reach this Core at, e.g. http://core-host:8800",
    )
    serve.add_argument(
        "--workspace-root",
        dest="workspace_roots",
        action="append",
        metavar="DIR",
        help="a directory under which the default project may bind self_hosted workspaces"
        " (repeatable; default: the home directory)",
    )
    serve.add_argument(
        "--ready-fd",
        dest="ready_fd",
        type=int,
        metavar="FD",
        help="once ready (as /readyz), write `ready PORT` to this inherited file descriptor"
        " and close it (for supervisors and tests: a ready signal instead of polling)",
    )
    serve.add_argument(
        "--no-local-runtime",
        dest="no_local_runtime",
        action="store_true",
        help="serve Core only; turns wait for a `corebox daemon` to connect",
    )


def _add_commands(commands: Any) -> None:
    """Every command but `serve`, each registered by the module that runs it."""
    from allinone import (
        admin,
        agents_cli,
        cluster_command,
        data_commands,
        devices,
        doctor_command,
        environments_cli,
        overlays_cli,
        postgres_command,
        run_control,
        session_forks,
        session_list,
        skill_commands,
        status_command,
    )
    from allinone.console import command as console_command
    from allinone.receiver import commands as comms_commands

    admin.add_commands(commands)
    comms_commands.add_commands(commands)
    devices.add_commands(commands)
    skill_commands.add_commands(commands)
    sessions = run_control.add_commands(commands)
    session_list.add_commands(sessions)
    session_forks.add_commands(sessions)
    data_commands.add_commands(commands)
    agents_cli.add_commands(commands)
    environments_cli.add_commands(commands)
    overlays_cli.add_commands(commands)
    console_command.add_commands(commands)
    doctor_command.add_command(commands)
    status_command.add_command(commands)
    cluster_command.add_command(commands)
    postgres_command.add_command(commands)
    cli_help.add_command(commands)


def _announcer(config: Config) -> Callable[[Started], None]:
    """What `corebox serve` says once it listens: the banner to a person at a terminal
    (standard error), the stable `corebox: ...` lines to a program reading standard
    output through a pipe."""

    def announce(started: Started) -> None:
        key_file = started.key_file or config.data_dir / KEY_FILE
        # An installed CLI's version tells which one runs; the in-tree harnesses have none.
        harnesses = tuple(
            f"{k.kind} {k.version}" if k.kind in CLI_HARNESSES else k.kind
            for k in started.harnesses
            if k.available
        )
        facts = Facts(
            version=__version__,
            host=config.host,
            port=started.port,
            data_dir=config.data_dir,
            new_key=started.api_key,
            key_file=key_file if key_file.is_file() else None,
            key_from_environment=config.api_key is not None,
            harnesses=harnesses,
            model=config.model or config.model_base_url,
            default_archived=started.default_archived,
        )
        if sys.stderr.isatty():
            print("\n".join(banner(facts)), file=sys.stderr, flush=True)
        if not sys.stdout.isatty():
            print("\n".join(machine_lines(facts)), flush=True)

    return announce


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["serve"]:
        return _serve(_parser(serve_only=True).parse_args(arguments))
    args = _parser().parse_args(arguments)
    if args.command == "serve":  # after options such as --version, which exit before
        return _serve(args)
    try:
        return _run(args)
    except BrokenPipeError:
        # The reader left early (`corebox sessions list | head -1`): stop quietly, as a
        # filter does, with the status of a process ended by SIGPIPE. Standard output
        # goes to /dev/null so that the flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _run(args: argparse.Namespace) -> int:
    """Every command but `serve`."""
    from allinone import (
        admin,
        data_commands,
        devices,
        doctor_command,
        run_control,
        session_forks,
        skill_commands,
        status_command,
    )
    from allinone.console import command as console_command
    from allinone.receiver import commands as comms_commands

    group_main = getattr(args, "group_main", None)
    if callable(group_main):  # command groups that dispatch themselves
        return int(group_main(args))
    if args.command in comms_commands.COMMANDS:
        return _receiver(args)
    if args.command in data_commands.COMMANDS:
        return data_commands.run_command(args, os.environ, sys.stdout)
    if args.command in ("projects", "keys"):
        try:
            admin.run(args, sys.stdout)
        except admin.AdminError as exc:
            print(f"corebox: error: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == "devices":
        try:
            devices.run(args, sys.stdout)
        except admin.AdminError as exc:
            print(f"corebox: error: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == skill_commands.COMMAND:
        return skill_commands.run_command(args, os.environ)
    if args.command == "sessions":
        try:
            if args.action in session_forks.ACTIONS:
                session_forks.run(args, sys.stdout)
                return 0
            return run_control.run(args, sys.stdout)
        except admin.AdminError as exc:
            print(f"corebox: error: {exc}", file=sys.stderr)
            return 1
    if args.command == "console":
        return console_command.run(args, sys.stdout, sys.stderr)
    if args.command == "completion":
        print(cli_help.completion(_parser(), args.shell), end="")
        return 0
    if args.command == status_command.COMMAND:
        return status_command.run_command(args, sys.stdout)
    if args.command == doctor_command.COMMAND:
        return doctor_command.run_command(args, sys.stdout)
    if args.command == "daemon":
        return _daemon(args)
    return 2


def _receiver(args: argparse.Namespace) -> int:
    """`receiver`, `handler` and `comms`; `comms` talks to the server every such command
    finds (`server_url`: the receiver package does not read corebox's configuration)."""
    from allinone.receiver import commands as comms_commands

    if args.command != "comms":
        return comms_commands.run_command(args, os.environ)
    try:
        config = load({"config": args.config}, os.environ, Path.cwd())
        server = server_url(args.url, os.environ, config)
    except ConfigError as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 1
    return comms_commands.run_command(args, os.environ, server)


def _serve(args: argparse.Namespace) -> int:
    flags = {
        k: getattr(args, k)
        for k in (
            "host",
            "port",
            "data_dir",
            "database_url",
            "log_level",
            "log_format",
            "config",
            "model_base_url",
            "model",
            "model_protocol",
            "model_timeout_seconds",
            "model_idle_timeout_seconds",
            "public_url",
            "workspace_roots",
        )
    }
    try:
        config = load(flags, os.environ, Path.cwd())
    except ConfigError as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 2
    logs.configure(config.log_level, config.log_format, sys.stderr)
    from allinone.startup import Warmup

    warmup = Warmup(config)  # prepares the data directory while the server is imported
    try:
        return _serve_with(args, config, warmup)
    finally:
        warmup.wait()


def _serve_with(args: argparse.Namespace, config: Config, warmup: Warmup) -> int:
    from allinone.app import App
    from allinone.startup import StartupError

    ready_fd: int | None = args.ready_fd

    def ready(started: Started) -> None:
        if ready_fd is not None:
            _signal_ready(ready_fd, started.port)

    try:
        app = App(
            config,
            on_started=_announcer(config),
            local_runtime=not args.no_local_runtime,
            on_ready=ready if ready_fd is not None else None,
            announced=sys.stderr.isatty(),  # the banner says where it serves
            warmup=warmup,
        )
        asyncio.run(app.run())
    except StartupError as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def _signal_ready(fd: int, port: int) -> None:
    """Tell whoever waits on `fd` that the server answers on `port`; closing it means a
    reader that sees end-of-file without the line knows the server never became ready."""
    try:
        os.write(fd, f"ready {port}\n".encode())
    except OSError as exc:
        logging.getLogger(__name__).warning("cannot write the ready signal: %s", exc.strerror)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


def _daemon(args: argparse.Namespace) -> int:
    from allinone import admin, devices

    try:
        target = devices.daemon_target(args)
    except admin.AdminError as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 2
    logs.configure(str(args.log_level), args.log_format or "text", sys.stderr)
    workspaces = Path(args.workspaces) if args.workspaces else None
    roots = tuple(Path(root) for root in args.allowed_roots or [str(Path.home())])
    if not all(root.is_absolute() for root in roots):
        print("corebox: error: --allowed-root needs absolute paths", file=sys.stderr)
        return 2
    print(f"corebox: runtime {target.device_id} connecting to {target.core_url}", flush=True)
    from allinone.app import RuntimeStopped, run_daemon

    try:
        asyncio.run(
            run_daemon(
                target.core_url,
                target.device_id,
                target.credential,
                workspaces,
                allowed_roots=roots,
                allow_unconfined=args.allow_unconfined,
            )
        )
    except RuntimeStopped as exc:
        read = f" (the credential file is {args.credential_file})" if exc.status == 401 else ""
        print(f"corebox: error: the Runtime stopped: {exc}{read}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0

"""The data directory's commands: they work on the files directly, with or without a
running server.

    corebox gc [--dry-run] [--retention-days N]   purge deleted data past its retention
    corebox storage [--json]                      bytes per category, reclaimable bytes
    corebox backup FILE                           a consistent copy, also while serving
    corebox restore FILE --data-dir DIR [--replace]
    corebox export [--project P] [--agents ID ...] [--sessions ID ...] -o BUNDLE
    corebox import BUNDLE [--project P]

Each takes `--data-dir` and `--config` (resolved like `corebox serve`). On success each
prints one summary line (`storage` prints its table, or JSON with `--json`); errors go
to stderr with exit status 1. None of them migrates the database: only `corebox serve`
does, as it starts, and an older build may be serving it meanwhile. A database at an
earlier build's schema is refused, changing nothing (`backup` copies it as it is, and
`restore` puts such a copy back), and so is a newer build's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from allinone.config import MAX_RETENTION_DAYS, ConfigError, load
from allinone.datadir import backup as backups
from allinone.datadir import bundle as bundles
from allinone.datadir import collection, usage
from allinone.progress import Bar
from storage.database import Database
from storage.errors import SchemaTooOld, StorageError

COMMANDS = ("gc", "storage", "backup", "restore", "export", "import")
# What a command that found an earlier build's schema (and changed nothing) says to do.
UPGRADE = (
    "start `corebox serve` once to upgrade it (stop any older corebox serving it first);"
    " nothing was changed"
)


def add_commands(commands: Any) -> None:
    """Add `gc`, `storage`, `backup` and `restore` to the CLI's subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", dest="data_dir", help="the data directory")
    common.add_argument("--config", help="a corebox.toml file")
    gc = commands.add_parser("gc", parents=[common], help="purge deleted data past retention")
    gc.add_argument("--dry-run", action="store_true", help="report what would go; change nothing")
    gc.add_argument(
        "--retention-days",
        dest="retention_days",
        type=_days,
        help="keep deleted data this long (default: the configured retention_days)",
    )
    report = commands.add_parser("storage", parents=[common], help="where the bytes are")
    report.add_argument("--json", action="store_true", help="print JSON")
    report.add_argument(
        "--retention-days",
        dest="retention_days",
        type=_days,
        help="what a gc keeping deleted data this long would reclaim"
        " (default: the configured retention_days)",
    )
    take = commands.add_parser("backup", parents=[common], help="write a consistent backup")
    take.add_argument("file")
    put = commands.add_parser("restore", parents=[common], help="restore a backup")
    put.add_argument("file")
    put.add_argument(
        "--replace", action="store_true", help="overwrite a stopped server's data directory"
    )
    out = commands.add_parser("export", parents=[common], help="write a bundle of agents/sessions")
    out.add_argument("-o", "--output", required=True, help="the bundle file to write")
    out.add_argument("--project", help="the project (default: the default project)")
    out.add_argument(
        "--agents",
        nargs="+",
        help="only these agents, with their versions and deployments (and no sessions"
        " unless --sessions names some)",
    )
    out.add_argument(
        "--sessions",
        nargs="+",
        help="only these sessions, with the saved agents they run and the environments they"
        " use (without --agents, no other agent); with neither, the whole project",
    )
    into = commands.add_parser("import", parents=[common], help="import a bundle (idempotent)")
    into.add_argument("file")
    into.add_argument("--project", help="the project (default: the default project)")


def _days(raw: str) -> float:
    """`--retention-days`: 0 to 36500 days, as `retention_days` in the configuration."""
    try:
        days = float(raw)
    except ValueError:
        days = math.nan
    if not 0 <= days <= MAX_RETENTION_DAYS:
        raise argparse.ArgumentTypeError(
            f"must be a number of days from 0 to {MAX_RETENTION_DAYS}, not {raw!r}"
        )
    return days


def run_command(args: argparse.Namespace, environ: Mapping[str, str], out: TextIO) -> int:
    flags = {"data_dir": args.data_dir, "config": args.config}
    if getattr(args, "retention_days", None) is not None:
        flags["retention_days"] = args.retention_days
    try:
        config = load(flags, environ, Path.cwd())
        if config.database_url is not None:
            raise StorageError(
                f"{args.command} works on the embedded SQLite store; this configuration keeps"
                " its state in PostgreSQL (database_url): use the server's own tools"
            )
        if args.command == "gc":
            with Bar("gc", sys.stderr, unit="steps") as bar:
                report = asyncio.run(
                    _gc(config.data_dir, config.retention_seconds, args.dry_run, bar)
                )
            print(report.summary(), file=out)
        elif args.command == "storage":
            figures = usage.report(
                config.data_dir, now=int(time.time()), retention_seconds=config.retention_seconds
            )
            _print_storage(figures, args.json, out)
        elif args.command == "backup":
            with Bar("backup", sys.stderr, unit="files") as bar:
                manifest = backups.backup(config.data_dir, Path(args.file), on_progress=bar)
            print(f"backup {args.file}: {len(manifest['files'])} files", file=out)
        elif args.command in ("export", "import"):
            print(_bundle(args, config.data_dir), file=out)
        else:
            with Bar("restore", sys.stderr, unit="files") as bar:
                manifest = backups.restore(
                    Path(args.file), config.data_dir, replace=args.replace, on_progress=bar
                )
            print(
                f"restored {len(manifest['files'])} files into {config.data_dir}"
                f" (schema {manifest['schema_version']})",
                file=out,
            )
    except SchemaTooOld as exc:
        print(f"corebox: error: {exc}: {UPGRADE}", file=sys.stderr)
        return 1
    except (ConfigError, StorageError, backups.BackupError, bundles.BundleError, OSError) as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 1
    return 0


def _write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` readable by its owner alone, whatever the umask: a bundle
    carries every transcript it exports, as the data directory (0700) and a backup do."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with open(fd, "wb") as out:
        os.fchmod(fd, 0o600)
        out.write(data)


def _bundle(args: argparse.Namespace, data_dir: Path) -> str:
    project = args.project or bundles.default_project(data_dir)
    if args.command == "export":
        with Bar("export", sys.stderr, unit="sessions") as bar:
            data = bundles.export(
                data_dir, project, agents=args.agents, sessions=args.sessions, on_progress=bar
            )
        target = Path(args.output)
        staged = target.with_name(target.name + ".tmp")
        try:
            _write_private(staged, data)
            staged.replace(target)
        except OSError as exc:
            staged.unlink(missing_ok=True)
            raise bundles.BundleError(f"cannot write {target}: {exc.strerror}") from exc
        return f"export {target}: {len(data)} bytes from project {project}"
    try:
        data = Path(args.file).read_bytes()
    except OSError as exc:
        raise bundles.BundleError(f"cannot read {args.file}: {exc.strerror}") from exc
    with Bar("import", sys.stderr, unit="sessions") as bar:
        added = bundles.import_bundle(data_dir, data, project, on_progress=bar)
    total = sum(added.values())
    into = f"import {args.file} into project {project}"
    if not added:
        return f"{into}: 0 rows added (the bundle holds no rows)"
    if total == 0:  # ids are kept, so a row already on this server is not added
        return f"{into}: 0 rows added (every row in it is already on this server)"
    return f"{into}: {total} rows added"


async def _gc(
    data_dir: Path, retention_seconds: int, dry_run: bool, on_progress: Bar
) -> collection.Report:
    if not (data_dir / collection.DATABASE_FILE).is_file():
        raise StorageError(f"no database in {data_dir}")
    # Never migrated here: an older build may be serving it.
    db = await Database.open(data_dir / collection.DATABASE_FILE, upgrade=False)
    try:
        return await collection.collect(
            db,
            data_dir,
            now=int(time.time()),
            retention_seconds=retention_seconds,
            dry_run=dry_run,
            on_progress=on_progress,
        )
    finally:
        await db.close()


def _print_storage(report: dict[str, Any], as_json: bool, out: TextIO) -> None:
    if as_json:
        print(json.dumps(report, indent=2, sort_keys=True), file=out)
        return
    for name, size in report["categories"].items():
        print(f"{name:<22} {size:>14,}", file=out)
    print(f"{'database file':<22} {report['database_file_bytes']:>14,}", file=out)
    print(f"{'reclaimable by gc':<22} {report['reclaimable_bytes']:>14,}", file=out)
    days = report["retention_days"]
    print(f"(deleted data is kept {days:g} days before gc purges it)", file=out)

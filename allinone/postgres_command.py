"""`corebox migrate-to-postgres`: copy an embedded installation's database into an
empty PostgreSQL database, for the move beyond one machine.

    corebox migrate-to-postgres --from ~/.local/share/corebox --to postgresql://u:p@db/corebox

Stop the server first. Every table is copied (blobs included, ids and sequence numbers
as they are) in one transaction, and row counts are compared before it commits; a
target that already holds data is refused. Then start the server with the same data
directory (it still holds the keys, blobs and workspaces) and `--database-url`. Prints
one summary line; a progress bar on a terminal. Exit code 0 when copied, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from allinone.datadir.collection import BLOBS_DIR, DATABASE_FILE
from allinone.progress import Bar
from storage import urls
from storage.blobs import BlobStore
from storage.errors import StorageError

COMMAND = "migrate-to-postgres"


def add_command(commands: Any) -> None:
    parser = commands.add_parser(
        COMMAND,
        help="copy an embedded installation into an empty PostgreSQL database",
        description="Copy the data directory's database into an empty PostgreSQL database.",
    )
    parser.add_argument(
        "--from", dest="source", required=True, help="the data directory to copy (stopped)"
    )
    parser.add_argument(
        "--to", dest="url", required=True, help="an empty PostgreSQL database (postgresql://...)"
    )
    parser.set_defaults(group_main=run)


def run(args: argparse.Namespace) -> int:
    # The PostgreSQL driver loads for this command only, not for every other one.
    from storage.transfer import copy_to_postgres

    url = str(args.url)
    if not urls.is_url(url):
        print("corebox: error: --to must be a postgresql:// URL", file=sys.stderr)
        return 1
    data_dir = Path(args.source).expanduser()
    source = data_dir / DATABASE_FILE
    from allinone.startup import DatabaseLock

    # A served database is refused (what its server acknowledged after the copy would be
    # left behind), and no server starts on it until the copy is done; a missing one is
    # the copy's to name.
    unserved = DatabaseLock.held(source, StorageError) if source.is_file() else nullcontext()
    try:
        with unserved, Bar("copy", sys.stderr, unit="rows") as bar:
            copied = asyncio.run(
                copy_to_postgres(source, url, bar, BlobStore(data_dir / BLOBS_DIR))
            )
    except StorageError as exc:
        print(f"corebox: error: {exc}", file=sys.stderr)
        return 1
    print(
        f"copied {copied.rows} rows in {copied.tables} tables from {source}"
        f" to {urls.redact(url)} (schema {copied.schema_version})"
    )
    return 0

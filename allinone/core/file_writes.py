"""Reservation of environment file writes, and settlement of the ones left unsettled.

A write is reserved durably (`reserved`) before any Runtime work. A write whose outcome
is unknown stays `unknown`, and a Core that stopped mid-write leaves its row `reserved`;
either blocks further writes to the Environment, because replaying it could change the
workspace twice. Before a write is refused for that (and only then), Core looks at the
workspace through the Runtime, read-only, at each unsettled row no live request can
still own: the file there with the row's exact bytes means the write happened
(`written`); nothing at the path means it did not (the row is dropped, never replayed);
anything else (other bytes, a symlink, a directory, a file too large to read whole, a
failed or unproven read) leaves it unsettled, to be looked at again at the next write.

A `reserved` row is owned by the request that made it until that request ends. Rows
owned in this process are never looked at. A row records the Core process that reserved
it: once that process is no longer live (it stopped, or its peers found it gone; on the
embedded SQLite default, every process before this one), no transfer of it can still
run, and the row is looked at at once. Any other row (this process's, once its request
ended, or a live peer's, or one from before rows named their process) is looked at only
once it is older than the longest its transfer may take.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import posixpath
from collections.abc import Iterator
from enum import StrEnum
from functools import partial
from typing import Any

from allinone.core.cluster.membership import Membership
from allinone.core.errors import TurnConflict
from allinone.core.gateway.connection import Connection, SendFailed
from allinone.core.gateway.workspace import (
    OPERATION_TIMEOUT_SECONDS,
    TRANSFER_TIMEOUT_SECONDS,
    WorkspaceClient,
    WorkspaceUnavailable,
    wire_uuid,
)
from allinone.core.ids import Clock
from allinone.core.workspace_paths import WORKSPACE, never_held
from runtime.proto import limits
from storage import cluster
from storage import environments as env_rows
from storage.database import Database, Tx

log = logging.getLogger(__name__)

# Slack on top of a transfer's own timeouts before another process's reservation is
# taken as abandoned: clock skew between Core processes and the final database write.
OWNER_SLACK_SECONDS = 120.0
# How many unsettled paths a refusal names.
NAMED_IN_REFUSAL = 3


class Verdict(StrEnum):
    """What the workspace shows about an unsettled write."""

    WRITTEN = "written"  # the file is there with the row's exact bytes
    NOT_WRITTEN = "not_written"  # nothing is at the path
    UNSETTLED = "unsettled"  # anything else: looked at again at the next write


def transfer_bound(size_bytes: int) -> float:
    """The longest a write of `size_bytes` may own its row: its read-only preparation
    and release, then begin, every chunk and commit, each under its own timeout."""
    steps = 2 + math.ceil(max(size_bytes, 0) / limits.MAX_CHUNK_BYTES)
    return 2 * OPERATION_TIMEOUT_SECONDS + steps * TRANSFER_TIMEOUT_SECONDS + OWNER_SLACK_SECONDS


async def _reserve(tx: Tx, row: dict[str, Any]) -> list[dict[str, Any]]:
    """Reserve `row` unless earlier writes to its environment are unsettled; returns
    those (nothing reserved) or [] (reserved). A write an older build left unknown at a
    path no file system holds certainly did not happen: it is settled here, in the same
    read, and no longer blocks."""
    unsettled = []
    for earlier in await env_rows.unsettled_rows(tx, row["environment_id"]):
        if earlier["state"] == "unknown" and never_held(earlier["path"]):
            await env_rows.settle_file(tx, earlier["id"], "unknown", written=False)
            log.warning(
                "environment %s: a file write left unknown at a name no file system holds "
                "is settled as not written",
                row["environment_id"],
            )
        else:
            unsettled.append(earlier)
    if not unsettled:
        await env_rows.reserve_file(tx, row)
    return unsettled


def _refusal(unsettled: list[dict[str, Any]]) -> TurnConflict:
    named = ", ".join(f"{r['path']} ({r['state']})" for r in unsettled[:NAMED_IN_REFUSAL])
    more = len(unsettled) - NAMED_IN_REFUSAL
    if more > 0:
        named += f" and {more} more"
    return TurnConflict(
        f"An earlier file write to this environment is unsettled: {named}. Its outcome "
        "could not be confirmed from the workspace yet (or it is still in progress); it is "
        "checked again at the next write, and nothing is replayed."
    )


class FileWrites:
    """Reservations of environment file writes and their settlement (see the module)."""

    def __init__(
        self,
        db: Database,
        client: WorkspaceClient,
        clock: Clock,
        harness: str,
        membership: Membership,
    ) -> None:
        self._db = db
        self._client = client
        self._clock = clock
        self._harness = harness
        self._membership = membership
        self._owned: set[str] = set()  # rows of the writes in flight in this process

    @contextlib.contextmanager
    def owning(self, row_id: str) -> Iterator[None]:
        """Mark the row `row_id` as owned by the caller's write while the block runs."""
        self._owned.add(row_id)
        try:
            yield
        finally:
            self._owned.discard(row_id)

    async def reserve(
        self, connection: Connection, environment: dict[str, Any], row: dict[str, Any]
    ) -> None:
        """Reserve `row` (call under `owning(row["id"])`). While earlier writes are
        unsettled, settle what the workspace shows first; refuse (409) if any remain.
        A broken uniqueness rule (a file already reserved at the path) propagates."""
        row = {**row, "reserved_by": self._membership.process_id}
        unsettled = await self._db.write(partial(_reserve, row=row))
        if not unsettled:
            return
        await self._settle(connection, environment, unsettled)
        unsettled = await self._db.write(partial(_reserve, row=row))
        if unsettled:
            raise _refusal(unsettled)

    def _settleable(self, row: dict[str, Any], live: set[str]) -> bool:
        if row["id"] in self._owned:
            return False
        if row["state"] == "unknown":
            return True
        owner = row["reserved_by"]
        if owner is not None and owner not in live:
            return True  # its process is gone, and every transfer of it
        age = self._clock.now() - int(row["created_at"])
        return age > transfer_bound(int(row["size_bytes"]))

    async def _live(self) -> set[str]:
        """The Core processes that may still own a reservation. Without peers a process
        counts as live until it stops (it writes no heartbeat), and every earlier one was
        closed when this one joined."""
        since = self._membership.since() if self._membership.shared else 0
        return {str(p["id"]) for p in await self._db.read(partial(cluster.live, since=since))}

    async def _settle(
        self, connection: Connection, environment: dict[str, Any], rows: list[dict[str, Any]]
    ) -> None:
        live = await self._live()
        rows = [row for row in rows if self._settleable(row, live)]
        if not rows:
            return
        try:
            async with self._client.read_only(
                connection, self._harness, wire_uuid(environment["id"]), environment
            ) as handle:
                for row in rows:
                    verdict = await self._observe(connection, handle, environment, row)
                    await self._record(environment["id"], row, verdict)
        except (WorkspaceUnavailable, SendFailed) as exc:
            log.warning(
                "environment %s: unsettled file writes could not be looked at (%s)",
                environment["id"],
                type(exc).__name__,
            )

    async def _record(self, environment_id: str, row: dict[str, Any], verdict: Verdict) -> None:
        if verdict is not Verdict.UNSETTLED:
            written = verdict is Verdict.WRITTEN
            settle = partial(env_rows.settle_file, file_row_id=row["id"], was=row["state"])
            if not await self._db.write(partial(settle, written=written)):
                return  # settled meanwhile by another request
        said = {
            Verdict.WRITTEN: "settled as written (its bytes are there)",
            Verdict.NOT_WRITTEN: "settled as not written (nothing is at its path)",
            Verdict.UNSETTLED: "still unsettled (the workspace shows neither)",
        }[verdict]
        log.warning(
            "environment %s: file write %s to %s, left %s, %s",
            environment_id,
            row["id"],
            row["path"],
            row["state"],
            said,
        )

    async def _observe(
        self, connection: Connection, handle: str, environment: dict[str, Any], row: dict[str, Any]
    ) -> Verdict:
        """What the workspace shows at the row's path. Reads are bounded by the
        protocol's byte limit: a file that cannot be read whole stays unsettled."""
        relative = str(row["path"])[len(WORKSPACE) + 1 :]
        wanted = min(int(row["size_bytes"]) + 1, limits.MAX_READ_RESULT_BYTES)
        try:
            data, truncated = await self._client.read_file(
                connection, handle, environment, relative, wanted
            )
        except WorkspaceUnavailable as exc:
            if exc.unknown or exc.code != "not_found":
                return Verdict.UNSETTLED
            return await self._absent(connection, handle, environment, relative)
        if not truncated and hashlib.sha256(data).hexdigest() == row["sha256"]:
            return Verdict.WRITTEN
        return Verdict.UNSETTLED

    async def _absent(
        self, connection: Connection, handle: str, environment: dict[str, Any], relative: str
    ) -> Verdict:
        """`not_found` also answers for a directory or a special file at the path: the
        parent's listing tells whether anything at all is there."""
        parent, name = posixpath.split(relative)
        try:
            listing = await self._client.list_directory(connection, handle, environment, parent)
        except WorkspaceUnavailable as exc:
            # No directory holds the parent's name, so nothing can be at the path.
            if not exc.unknown and exc.code == "not_directory":
                return Verdict.NOT_WRITTEN
            return Verdict.UNSETTLED
        if listing.truncated or any(entry.name == name for entry in listing.entries):
            return Verdict.UNSETTLED
        return Verdict.NOT_WRITTEN

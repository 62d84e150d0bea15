"""Reservation of environment file writes, and settlement of the ones left unsettled.

A write is reserved durably (`reserved`) before any Runtime work, its prior state
`pending`. Then, through the write's read-only preparation and before its transfer
begins, Core looks at the path and records durably what it holds (`record_prior`): the
sha256 of a regular file read whole, `absent` when nothing is there, `unreadable` for
anything else (a symlink, a directory, a file too large to read whole, a refused read).
Only then does the transfer begin; a write that never got that far drops its row.

A write whose outcome is unknown stays `unknown`, and a Core that stopped mid-write
leaves its row `reserved`; either blocks further writes to the Environment, because
replaying it could change the workspace twice. Before a write is refused for that (and
only then), Core settles each unsettled row no live request can still own. A row still
`pending` never began its transfer: it did not happen (the row is dropped, never
replayed), without looking. For any other row Core looks at the workspace through the
Runtime, read-only: the file there with the row's exact bytes means the write happened
(`written`); the path showing what it held before the write (the prior file's exact
bytes, or nothing when it was `absent`) means it did not (dropped). Rows from before
the prior state was recorded (and an environment's initial files) have none: for them
nothing at the path means not written. Anything else (other bytes, nothing where a file
or an unreadable thing was, a symlink, a directory, a file too large to read whole, a
failed or unproven read) leaves the row unsettled, looked at again at the next write.

A `reserved` row is owned by the request that made it until that request ends. Rows
owned in this process are never looked at. A row records the Core process that reserved
it: once that process is no longer live (it stopped, or its peers found it gone; on the
embedded SQLite default, every process before this one), no transfer of it can still
run, and the row is settled at once. So is a row naming no process (reserved by a build
before schema 38, or an environment's initial file) reserved before this process joined,
on the embedded SQLite default: with no peers, the process that reserved it has stopped
(this one took the serving lock only then). Any other row (this
process's, once its request ended, a live peer's, or one naming no process on a shared
database) is settled only once it is older than the longest its write may take.
Recording the prior state and settling a `pending` row are compare-and-sets on it, so a
request still looking at its path when its row is settled as never begun finds it gone
and never begins.
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


# A row's prior state besides the sha256 of the regular file its path held.
PENDING = "pending"  # not recorded yet: the transfer was never begun
ABSENT = "absent"  # nothing was at the path
UNREADABLE = "unreadable"  # something Core could not read whole, or a refused read


class Verdict(StrEnum):
    """What the workspace shows about an unsettled write."""

    WRITTEN = "written"  # the file is there with the row's exact bytes
    NOT_WRITTEN = "not_written"  # the path shows what it held before, or it never began
    UNSETTLED = "unsettled"  # anything else: looked at again at the next write


def judge(row: dict[str, Any], seen: str) -> Verdict:
    """The verdict on the write `row` (not `pending`) from what its path holds now
    (`seen`: a sha256, `absent` or `unreadable`). A row with no prior state recorded
    is taken to have found nothing there, as before prior states were recorded."""
    if seen == row["sha256"]:
        return Verdict.WRITTEN
    before = row.get("prior") or ABSENT
    if seen != UNREADABLE and seen == before:
        return Verdict.NOT_WRITTEN
    return Verdict.UNSETTLED


def transfer_bound(size_bytes: int) -> float:
    """The longest a write of `size_bytes` may own its row: its read-only preparation,
    the read (and listing) of what its path holds, and its release, then begin, every
    chunk and commit, each under its own timeout."""
    steps = 2 + math.ceil(max(size_bytes, 0) / limits.MAX_CHUNK_BYTES)
    return 4 * OPERATION_TIMEOUT_SECONDS + steps * TRANSFER_TIMEOUT_SECONDS + OWNER_SLACK_SECONDS


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
        if owner is None and self._earlier(row):
            return True  # an earlier process's, gone with it
        age = self._clock.now() - int(row["created_at"])
        return age > transfer_bound(int(row["size_bytes"]))

    def _earlier(self, row: dict[str, Any]) -> bool:
        """Whether `row` was reserved by a process before this one with no peers (the
        embedded SQLite default), where every earlier process has stopped: the serving
        lock was taken only once it had."""
        joined = self._membership.joined_at
        if self._membership.shared or joined is None:
            return False
        return int(row["created_at"]) < joined

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
        for row in rows:
            if row["prior"] == PENDING:  # never begun: nothing to look at
                await self._record(environment["id"], row, Verdict.NOT_WRITTEN, None)
        rows = [row for row in rows if row["prior"] != PENDING]
        if not rows:
            return
        try:
            async with self._client.read_only(
                connection, self._harness, wire_uuid(environment["id"]), environment
            ) as handle:
                for row in rows:
                    seen = await self._observe(connection, handle, environment, row)
                    await self._record(environment["id"], row, judge(row, seen), seen)
        except (WorkspaceUnavailable, SendFailed) as exc:
            log.warning(
                "environment %s: unsettled file writes could not be looked at (%s)",
                environment["id"],
                type(exc).__name__,
            )

    async def _record(
        self, environment_id: str, row: dict[str, Any], verdict: Verdict, seen: str | None
    ) -> None:
        """Settle `row` as `verdict` found (`seen` at its path; None: not looked at)."""
        if verdict is not Verdict.UNSETTLED:
            settle = partial(
                env_rows.settle_file,
                file_row_id=row["id"],
                was=row["state"],
                written=verdict is Verdict.WRITTEN,
                pending=seen is None,
            )
            if not await self._db.write(settle):
                return  # settled meanwhile by another request, or its prior recorded
        if verdict is Verdict.WRITTEN:
            said = "settled as written (its bytes are there)"
        elif seen is None:
            said = "settled as not written (its transfer never began)"
        elif verdict is Verdict.NOT_WRITTEN and seen == ABSENT:
            said = "settled as not written (nothing is at its path)"
        elif verdict is Verdict.NOT_WRITTEN:
            said = "settled as not written (the file it replaces is there unchanged)"
        else:
            said = "still unsettled (the workspace shows neither)"
        log.warning(
            "environment %s: file write %s to %s, left %s, %s",
            environment_id,
            row["id"],
            row["path"],
            row["state"],
            said,
        )

    async def record_prior(
        self,
        connection: Connection,
        handle: str,
        environment: dict[str, Any],
        row_id: str,
        path: str,
    ) -> bool:
        """Look at `path` through the write's read-only `handle` and record durably what
        it holds as the row's prior state; the caller may begin the transfer only when
        this returns True (False: the row was settled as never begun meanwhile). A read
        whose reply proves nothing raises WorkspaceUnavailable (`unknown`), recording
        nothing."""
        relative = path[len(WORKSPACE) + 1 :]
        seen = await self._look(
            connection, handle, environment, relative, limits.MAX_READ_RESULT_BYTES
        )
        return await self._db.write(partial(env_rows.set_prior, file_row_id=row_id, prior=seen))

    async def _observe(
        self, connection: Connection, handle: str, environment: dict[str, Any], row: dict[str, Any]
    ) -> str:
        """What the row's path holds now (`unreadable` when a reply proves nothing). A
        file is read whole only up to the protocol's byte limit, and only as far as
        telling the row's bytes (or its prior file's) from others needs."""
        relative = str(row["path"])[len(WORKSPACE) + 1 :]
        wanted = min(int(row["size_bytes"]) + 1, limits.MAX_READ_RESULT_BYTES)
        if row.get("prior") not in (None, PENDING, ABSENT, UNREADABLE):
            wanted = limits.MAX_READ_RESULT_BYTES  # the prior file may be larger
        try:
            return await self._look(connection, handle, environment, relative, wanted)
        except WorkspaceUnavailable:
            return UNREADABLE

    async def _look(
        self,
        connection: Connection,
        handle: str,
        environment: dict[str, Any],
        relative: str,
        max_bytes: int,
    ) -> str:
        """The sha256 of the regular file at `relative` read whole within `max_bytes`,
        `absent` when nothing is there, else `unreadable`; a reply that proves nothing
        raises WorkspaceUnavailable (`unknown`)."""
        try:
            data, truncated = await self._client.read_file(
                connection, handle, environment, relative, max_bytes
            )
        except WorkspaceUnavailable as exc:
            if exc.unknown:
                raise
            if exc.code != "not_found":
                return UNREADABLE
            return await self._absent(connection, handle, environment, relative)
        return UNREADABLE if truncated else hashlib.sha256(data).hexdigest()

    async def _absent(
        self, connection: Connection, handle: str, environment: dict[str, Any], relative: str
    ) -> str:
        """`not_found` also answers for a directory or a special file at the path: the
        parent's listing tells whether anything at all is there."""
        parent, name = posixpath.split(relative)
        try:
            listing = await self._client.list_directory(connection, handle, environment, parent)
        except WorkspaceUnavailable as exc:
            if exc.unknown:
                raise
            # No directory holds the parent's name, so nothing can be at the path.
            return ABSENT if exc.code == "not_directory" else UNREADABLE
        if listing.truncated or any(entry.name == name for entry in listing.entries):
            return UNREADABLE
        return ABSENT

"""The receiver's private local store: one SQLite file next to the configuration, with
an exclusive process lock beside it.

Contract:
- `Store.open` takes the lock (flock, or msvcrt on Windows; non-blocking) before
  touching the database, then brings its schema up to date (schema.py: numbered
  migrations; a store from a newer build is refused); a second `once`, `run` or
  `resolve` on the same directory gets LockHeld. `Store.peek`
  opens read-only without the lock (for `status`).
- `transaction()` is one local transaction (BEGIN IMMEDIATE ... COMMIT with
  synchronous=FULL): what it wrote is durable when the block exits.
- `save_page` stores a page of events, their pending-handling state, `next_after` and
  the stream id in one transaction. Events are deduplicated by event_id; a seq that
  another event_id already holds in the same stream halts the cycle (SEQ_CONFLICT),
  nothing is written. An event already saved under an earlier stream and replayed by
  a new one (after a platform restore and a stream rotation) moves to the new stream
  and its seq there. Receipts go out only for events of the current stream: a seq
  saved under an earlier stream is never confirmed to a later one.
sqlite3 errors become StoreError here.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from allinone.receiver.errors import Halted, LockHeld, StoreError
from allinone.receiver.jobs import (
    OPEN_JOBS,
    JobState,
    NoticeState,
    check_job,
    check_notice,
)
from allinone.receiver.schema import migrate

if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _rows(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    return [dict(row) for row in cursor.fetchall()]


class Store:
    def __init__(self, conn: sqlite3.Connection, lock_fd: int | None) -> None:
        self._conn = conn
        self._lock_fd = lock_fd

    @classmethod
    def open(cls, path: Path, lock_path: Path) -> Store:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _lock(fd)
        except OSError as exc:
            os.close(fd)
            raise LockHeld(f"another receiver process holds {lock_path}") from exc
        try:
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
            if stat.S_IMODE(os.stat(path).st_mode) & 0o077:
                raise StoreError(f"{path} must be mode 0600; refusing to use it")
            conn = sqlite3.connect(path, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA busy_timeout=5000")
            try:
                migrate(conn)
            except (StoreError, sqlite3.Error):
                conn.close()
                raise
        except StoreError:
            os.close(fd)
            raise
        except (OSError, sqlite3.Error) as exc:
            os.close(fd)
            raise StoreError(f"cannot open the local store {path}: {exc}") from exc
        return cls(conn, fd)

    @classmethod
    def peek(cls, path: Path) -> Store | None:
        """Open read-only without the lock, or None when there is no store yet."""
        if not path.exists():
            return None
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
            conn.row_factory = sqlite3.Row
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the local store {path}: {exc}") from exc
        return cls(conn, None)

    def close(self) -> None:
        self._conn.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"local store: {exc}") from exc
        try:
            yield self._conn
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"local store: {exc}") from exc
            raise
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"local store commit failed: {exc}") from exc

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        try:
            return _rows(self._conn.execute(sql, params))
        except sqlite3.Error as exc:
            raise StoreError(f"local store: {exc}") from exc

    # meta -----------------------------------------------------------------------------

    def meta(self, key: str, default: Any = None) -> Any:
        found = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(found[0]["value"]) if found else default

    @staticmethod
    def set_meta(conn: sqlite3.Connection, key: str, value: Any) -> None:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    def put_meta(self, values: dict[str, Any]) -> None:
        with self.transaction() as conn:
            for key, value in values.items():
                self.set_meta(conn, key, value)

    # events ---------------------------------------------------------------------------

    def save_page(
        self, items: list[dict[str, Any]], stream_id: str, next_after: int, gap: bool, now: int
    ) -> int:
        """Persist a page with its pending state and cursor; return how many were new."""
        added = 0
        with self.transaction() as conn:
            for item in items:
                if self._save_event(conn, item, now):
                    added += 1
            self.set_meta(conn, "stream_id", stream_id)
            self.set_meta(conn, "next_after", next_after)
            if gap and self.meta("history_gap_detected_at") is None:
                self.set_meta(conn, "history_gap_detected_at", now)
        return added

    @staticmethod
    def _save_event(conn: sqlite3.Connection, item: dict[str, Any], now: int) -> bool:
        seq, stream = int(item["seq"]), str(item["stream_id"])
        known = conn.execute(
            "SELECT stream_id, seq FROM events WHERE event_id = ?", (item["event_id"],)
        ).fetchone()
        holder = conn.execute(
            "SELECT event_id FROM events WHERE stream_id = ? AND seq = ?", (stream, seq)
        ).fetchone()
        if holder is not None and holder["event_id"] != item["event_id"]:
            raise Halted("SEQ_CONFLICT", f"seq {seq} of stream {stream} now names another event")
        if known is not None:
            if known["stream_id"] != stream:
                conn.execute(
                    "UPDATE events SET stream_id = ?, seq = ? WHERE event_id = ?",
                    (stream, seq, item["event_id"]),
                )
            return False
        inbound = item["direction"] == "inbound"
        pending = inbound and item["type"] == "message"
        conn.execute(
            "INSERT INTO events (event_id, stream_id, seq, contact_id, type, direction, body,"
            " created_at, contact_expires_at, receipted, pending, saved_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item["event_id"],
                stream,
                seq,
                item["contact_id"],
                item["type"],
                item["direction"],
                json.dumps(item),
                int(item["created_at"]),
                int(item["contact_expires_at"]),
                0 if inbound else 1,
                1 if pending else 0,
                now,
            ),
        )
        return True

    def unreceipted(self, limit: int = 100) -> list[tuple[int, str]]:
        """(seq, event_id) of the current stream's events saved and not yet receipted."""
        found = self._query(
            "SELECT seq, event_id FROM events WHERE receipted = 0 AND stream_id ="
            " (SELECT json_extract(value, '$') FROM meta WHERE key = 'stream_id')"
            " ORDER BY seq LIMIT ?",
            (limit,),
        )
        return [(int(row["seq"]), str(row["event_id"])) for row in found]

    def mark_receipted(self, seqs: list[int]) -> None:
        with self.transaction() as conn:
            conn.executemany(
                "UPDATE events SET receipted = 1 WHERE seq = ? AND stream_id ="
                " (SELECT json_extract(value, '$') FROM meta WHERE key = 'stream_id')",
                [(s,) for s in seqs],
            )

    def settle_orphans(self) -> int:
        """After a changed stream was replayed to its end: events it did not replay are
        history the platform no longer has. They stay for the owner to read, are never
        receipted and are no longer waiting to be handled (no claim could name them).
        Return how many there are."""
        stream = self.meta("stream_id")
        with self.transaction() as conn:
            conn.execute(
                "UPDATE events SET pending = 0 WHERE stream_id != ? AND job_id IS NULL",
                (stream,),
            )
            found = conn.execute(
                "SELECT COUNT(*) FROM events WHERE stream_id != ?", (stream,)
            ).fetchone()
            self.set_meta(conn, "orphaned_events", int(found[0]))
        return int(found[0])

    def contact_events(self, contact_id: str) -> list[dict[str, Any]]:
        return self._query("SELECT * FROM events WHERE contact_id = ? ORDER BY seq", (contact_id,))

    def unassigned_pending(self, contact_id: str) -> list[dict[str, Any]]:
        return self._query(
            "SELECT * FROM events WHERE contact_id = ? AND pending = 1 AND job_id IS NULL"
            " ORDER BY seq",
            (contact_id,),
        )

    def is_closed(self, contact_id: str) -> bool:
        found = self._query(
            "SELECT 1 FROM events WHERE contact_id = ? AND type = 'contact.closed' LIMIT 1",
            (contact_id,),
        )
        return bool(found)

    def drop_pending(self, contact_id: str) -> int:
        """Clear the pending mark of unassigned messages no job will handle."""
        with self.transaction() as conn:
            return conn.execute(
                "UPDATE events SET pending = 0 WHERE contact_id = ? AND pending = 1"
                " AND job_id IS NULL",
                (contact_id,),
            ).rowcount

    def contacts_with_work(self, limit: int) -> list[str]:
        """Contacts whose open job can move on without the owner, then contacts with
        unassigned pending messages and no open job; oldest first."""
        movable = ("claiming", "claimed", "decided", "replied")
        open_states = tuple(state.value for state in OPEN_JOBS)
        first = self._query(
            f"SELECT contact_id FROM jobs WHERE state IN ({','.join('?' * len(movable))})"
            " GROUP BY contact_id ORDER BY MIN(created_at) LIMIT ?",
            (*movable, limit),
        )
        then = self._query(
            "SELECT e.contact_id FROM events e WHERE e.pending = 1 AND e.job_id IS NULL"
            " AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.contact_id = e.contact_id"
            f" AND j.state IN ({','.join('?' * len(open_states))}))"
            " GROUP BY e.contact_id ORDER BY MIN(e.seq) LIMIT ?",
            (*open_states, limit),
        )
        found = dict.fromkeys(str(row["contact_id"]) for row in [*first, *then])
        return list(found)[:limit]

    # jobs -----------------------------------------------------------------------------

    def create_job(self, job: dict[str, Any]) -> None:
        """Insert a job in `claiming` and assign it the contact's pending events up to its
        watermark, in one transaction."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO jobs (job_id, contact_id, through_seq, state, lease_id,"
                " primary_epoch, reply_key, notification_id, contact_expires_at, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job["job_id"],
                    job["contact_id"],
                    job["through_seq"],
                    JobState.CLAIMING.value,
                    job["lease_id"],
                    job["primary_epoch"],
                    job["reply_key"],
                    job["notification_id"],
                    job["contact_expires_at"],
                    job["created_at"],
                    job["created_at"],
                ),
            )
            conn.execute(
                "UPDATE events SET job_id = ? WHERE contact_id = ? AND pending = 1"
                " AND job_id IS NULL AND seq <= ?",
                (job["job_id"], job["contact_id"], job["through_seq"]),
            )

    def job(self, job_id: str) -> dict[str, Any] | None:
        found = self._query("SELECT * FROM jobs WHERE job_id = ?", (job_id,))
        return _decoded(found[0]) if found else None

    def open_job(self, contact_id: str) -> dict[str, Any] | None:
        states = tuple(state.value for state in OPEN_JOBS)
        found = self._query(
            f"SELECT * FROM jobs WHERE contact_id = ? AND state IN ({','.join('?' * len(states))})"
            " ORDER BY created_at LIMIT 1",
            (contact_id, *states),
        )
        return _decoded(found[0]) if found else None

    def move_job(
        self, job: dict[str, Any], target: JobState, now: int, **fields: Any
    ) -> dict[str, Any]:
        """Compare-and-set the job from its current state to `target`, with `fields`.

        Settling (done) clears the pending mark of its events; abandoning releases them.
        """
        if target.value != job["state"]:
            check_job(job["state"], target)
        if "decision" in fields and fields["decision"] is not None:
            fields["decision"] = json.dumps(fields["decision"])
        names = "".join(f", {name} = ?" for name in fields)  # names fixed by callers
        with self.transaction() as conn:
            changed = conn.execute(
                f"UPDATE jobs SET state = ?, updated_at = ?{names} WHERE job_id = ? AND state = ?",
                (target.value, now, *fields.values(), job["job_id"], job["state"]),
            ).rowcount
            if changed != 1:
                raise StoreError(f"job {job['job_id']} changed underneath this process")
            if target is JobState.DONE:
                conn.execute("UPDATE events SET pending = 0 WHERE job_id = ?", (job["job_id"],))
            elif target is JobState.ABANDONED:
                conn.execute("UPDATE events SET job_id = NULL WHERE job_id = ?", (job["job_id"],))
        updated = self.job(job["job_id"])
        assert updated is not None
        return updated

    def jobs_in(self, states: tuple[str, ...]) -> list[dict[str, Any]]:
        return [
            _decoded(row)
            for row in self._query(
                f"SELECT * FROM jobs WHERE state IN ({','.join('?' * len(states))})"
                " ORDER BY created_at",
                states,
            )
        ]

    # notifications --------------------------------------------------------------------

    def add_notification(self, notice: dict[str, Any]) -> None:
        """Record a notification once; a second add with the same id changes nothing."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO notifications (notification_id, job_id, contact_id, summary, state,"
                " contact_expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(notification_id) DO NOTHING",
                (
                    notice["notification_id"],
                    notice.get("job_id"),
                    notice["contact_id"],
                    notice["summary"],
                    NoticeState.PENDING.value,
                    notice["contact_expires_at"],
                    notice["created_at"],
                    notice["created_at"],
                ),
            )

    def notification(self, notification_id: str) -> dict[str, Any] | None:
        found = self._query(
            "SELECT * FROM notifications WHERE notification_id = ?", (notification_id,)
        )
        return found[0] if found else None

    def notifications_in(self, states: tuple[str, ...]) -> list[dict[str, Any]]:
        return self._query(
            f"SELECT * FROM notifications WHERE state IN ({','.join('?' * len(states))})"
            " ORDER BY created_at",
            states,
        )

    def move_notification(
        self, notice: dict[str, Any], target: NoticeState, now: int, code: str | None = None
    ) -> None:
        check_notice(notice["state"], target)
        attempts = 1 if target is NoticeState.DELIVERING else 0
        with self.transaction() as conn:
            changed = conn.execute(
                "UPDATE notifications SET state = ?, code = ?, attempts = attempts + ?,"
                " updated_at = ? WHERE notification_id = ? AND state = ?",
                (target.value, code, attempts, now, notice["notification_id"], notice["state"]),
            ).rowcount
        if changed != 1:
            raise StoreError(f"notification {notice['notification_id']} changed meanwhile")

    # retention and reporting ----------------------------------------------------------

    def purge_expired(self, now: int) -> int:
        """Delete local business content of contacts past their 7-day expiry."""
        with self.transaction() as conn:
            total = 0
            for table in ("events", "jobs", "notifications"):
                total += conn.execute(
                    f"DELETE FROM {table} WHERE contact_expires_at <= ?", (now,)
                ).rowcount
        return total

    def counts(self) -> dict[str, Any]:
        def grouped(table: str) -> dict[str, int]:
            rows = self._query(f"SELECT state, COUNT(*) AS n FROM {table} GROUP BY state")
            return {str(row["state"]): int(row["n"]) for row in rows}

        events = self._query(
            "SELECT COUNT(*) AS n, COALESCE(SUM(pending), 0) AS pending,"
            " COALESCE(SUM(1 - receipted), 0) AS unreceipted FROM events"
        )[0]
        return {
            "events": int(events["n"]),
            "pending": int(events["pending"]),
            "unreceipted": int(events["unreceipted"]),
            "jobs": grouped("jobs"),
            "notifications": grouped("notifications"),
        }


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    if row.get("decision"):
        row["decision"] = json.loads(row["decision"])
    return row

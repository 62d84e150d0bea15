"""`corebox storage`: where the data directory's bytes are, and what `gc` would reclaim
with the same retention (an estimate: rows are counted by their payloads).

Read-only; safe while a server runs (it reads a snapshot through its own connection).
A database at another build's schema is refused (`SchemaTooOld`, `SchemaTooNew`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from allinone.datadir.collection import BLOBS_DIR, DATABASE_FILE, SNAPSHOTS_DIR, WORKSPACES_DIR
from storage import purge
from storage.blobs import BlobStore
from storage.database import check_schema
from storage.errors import StorageError

# Tables by category; any table not named here counts as `other`.
CATEGORIES: dict[str, tuple[str, ...]] = {
    "journal": ("session_events",),
    "sessions": ("sessions",),
    "turns and items": (
        "turns",
        "turn_documents",
        "items",
        "turn_inputs",
        "function_calls",
        "interactions",
    ),
    "artifacts and files": ("artifacts", "files", "environment_files"),
}

# Bytes held by rows a gc would purge now: sessions deleted at or before the cutoff
# (their journal, their items, their artifacts), artifacts deleted by then, and uploaded
# files expired by now. Each query takes (cutoff, now) as it needs.
_RECLAIMABLE = (
    "SELECT COALESCE(SUM(LENGTH(payload)), 0) FROM session_events WHERE session_key IN"
    " (SELECT journal_key FROM sessions WHERE deleted_at IS NOT NULL AND deleted_at <= :cutoff)",
    "SELECT COALESCE(SUM(LENGTH(payload)), 0) FROM items WHERE session_id IN"
    " (SELECT id FROM sessions WHERE deleted_at IS NOT NULL AND deleted_at <= :cutoff)",
    "SELECT COALESCE(SUM(size_bytes), 0) FROM artifacts"
    " WHERE (deleted_at IS NOT NULL AND deleted_at <= :cutoff) OR session_id IN"
    " (SELECT id FROM sessions WHERE deleted_at IS NOT NULL AND deleted_at <= :cutoff)",
    "SELECT COALESCE(SUM(bytes), 0) FROM files WHERE expires_at <= :now",
)


def tree_bytes(root: Path) -> int:
    """The bytes of the regular files under `root`, a file with several names (a
    snapshot's hard link to an unchanged file) counted once."""
    if not root.is_dir():
        return 0
    sizes: dict[tuple[int, int], int] = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            info = path.stat()
            sizes[(info.st_dev, info.st_ino)] = info.st_size
    return sum(sizes.values())


def report(data_dir: Path, *, now: int, retention_seconds: int) -> dict[str, Any]:
    """Bytes per category (database tables by category, free pages, workspaces, blobs),
    and the bytes a gc with this retention would reclaim now: free pages, rows it would
    purge, and blobs no row names."""
    db_path = data_dir / DATABASE_FILE
    if not db_path.is_file():
        raise StorageError(f"no database in {data_dir}")
    check_schema(db_path)  # the categories and the estimate read this build's tables
    window = {"cutoff": now - retention_seconds, "now": now}
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    try:
        per_table = dict(
            conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
        )
        indexes = dict(
            conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'")
        )
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0] * page_size
        deleted = sum(conn.execute(sql, window).fetchone()[0] for sql in _RECLAIMABLE)
        referenced = {str(row[0]) for row in conn.execute(purge.REFERENCED_BLOBS)}
    finally:
        conn.close()
    categories: dict[str, int] = {name: 0 for name in (*CATEGORIES, "other")}
    for name, size in per_table.items():
        table = indexes.get(name, name)
        found = next((c for c, tables in CATEGORIES.items() if table in tables), "other")
        categories[found] += int(size)
    categories["free pages"] = free
    categories["workspaces"] = tree_bytes(data_dir / WORKSPACES_DIR)
    categories["snapshots"] = tree_bytes(data_dir / SNAPSHOTS_DIR)
    categories["blobs"] = tree_bytes(data_dir / BLOBS_DIR)
    return {
        "database_file_bytes": sum(
            p.stat().st_size for p in data_dir.glob(DATABASE_FILE + "*") if p.is_file()
        ),
        "categories": categories,
        "retention_days": retention_seconds / 86400,
        "reclaimable_bytes": free + deleted + _unreferenced_bytes(data_dir, referenced),
    }


def _unreferenced_bytes(data_dir: Path, referenced: set[str]) -> int:
    store = BlobStore(data_dir / BLOBS_DIR)
    return sum(store.path(name).stat().st_size for name in store.names() if name not in referenced)

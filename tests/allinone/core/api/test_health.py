"""Readiness evidence on a real SQLite file: what only the Core key sees is read only
for the Core key, and readiness does not depend on it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from allinone.core.api.health import Health
from allinone.core.ids import Clock
from storage.database import Database


def _evidence(path: Path, owner: bool) -> tuple[bool, dict[str, Any], int]:
    """The evidence of a server with no Runtime, and the read jobs it took."""

    async def main() -> tuple[bool, dict[str, Any], int]:
        db = await Database.open(path)
        try:
            health = Health(db, [], lambda: True, Clock(), {})  # type: ignore[arg-type]
            before = db.counters()["read_jobs"]
            ready, checks = await health.evidence(owner=owner)
            return ready, checks, db.counters()["read_jobs"] - before
        finally:
            await db.close()

    return asyncio.run(main())


def test_the_turns_and_overlays_are_read_only_for_the_owner(tmp_path: Path) -> None:
    ready, full, reads = _evidence(tmp_path / "a.db", owner=True)
    assert full["turns"] == {"ok": True, "active": 0, "queued": 0, "paused": 0, "resuming": 0}
    assert full["overlays"] == {"ok": True, "active": []}
    probe, shown, fewer = _evidence(tmp_path / "a.db", owner=False)
    assert (shown["turns"], shown["overlays"]) == ({"ok": True}, {"ok": True})
    assert reads - fewer == 2  # the turn counts and the active overlays
    assert (probe, ready) == (False, False)  # no Runtime: not ready, either way
    assert [n for n, c in shown.items() if not c["ok"]] == ["runtime"]
    assert [n for n, c in full.items() if not c["ok"]] == ["runtime"]

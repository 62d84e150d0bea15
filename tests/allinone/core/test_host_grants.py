"""The owner's host grants against a real SQLite file: which roots each project may use,
the data directory never, and who may run commands when nothing confines them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from allinone.core.errors import InvalidRequest
from allinone.core.host_grants import TRUSTED, WORKSPACE_ROOT, HostGrants
from allinone.core.ids import Clock, Ids
from allinone.credentials import FirstStart, ensure_default_project
from storage import tenancy
from storage.database import Database, Tx


async def default_and_another(
    data: Path, archived: bool = False
) -> tuple[Database, Clock, FirstStart]:
    """A database in `data` with its default project (archived when `archived`) and
    `proj_other`, made after it."""
    db = await Database.open(data / "corebox.db")
    clock = Clock()
    first = await ensure_default_project(db, Ids(clock), clock, data, "cbx-test-key")

    async def other(tx: Tx) -> None:
        await tenancy.insert_project(tx, "proj_other", "other", clock.now() + 1)
        if archived:
            await tx.execute(
                "UPDATE projects SET archived_at = ? WHERE id = ?", (clock.now(), first.project_id)
            )

    await db.write(other)
    return db, clock, first


def test_grants_decide_roots_and_unconfined_commands(tmp_path: Path) -> None:
    data, home, shared = tmp_path / "data", tmp_path / "home", tmp_path / "shared"
    for path in (data, home / "src", shared / "team"):
        path.mkdir(parents=True)

    async def main() -> None:
        db, clock, first = await default_and_another(data)
        try:
            grants = HostGrants(db, clock, (home, data), data, {"kind": "none"})
            await grants.load()
            default = first.project_id
            assert grants.refusal(default, str(home / "src")) is None
            assert grants.refusal(default, str(data / "workspaces")) is not None
            assert grants.refusal(default, str(tmp_path)) is not None
            assert grants.refusal("proj_other", str(home / "src")) is not None
            assert grants.commands_allowed(default)
            assert not grants.commands_allowed("proj_other")
            with pytest.raises(InvalidRequest):
                grants.check_grantable(str(data))
            await grants.grant("proj_other", WORKSPACE_ROOT, str(shared))
            await grants.grant("proj_other", TRUSTED)
            assert grants.refusal("proj_other", str(shared / "team")) is None
            assert grants.commands_allowed("proj_other")
            assert set(grants.all_roots()) == {home, data, shared}
            # The grants survive a restart (they are in the database).
            again = HostGrants(db, clock, (home,), data, {"kind": "none"})
            await again.load()
            assert again.refusal("proj_other", str(shared / "team")) is None
            assert again.trusted("proj_other")
            await again.revoke("proj_other", TRUSTED)
            await again.revoke("proj_other", WORKSPACE_ROOT, str(shared))
            assert not again.commands_allowed("proj_other")
            assert again.refusal("proj_other", str(shared / "team")) is not None
            confined = HostGrants(db, clock, (home,), data, {"kind": "landlock", "abi": 7})
            await confined.load()
            assert confined.commands_allowed("proj_other")
        finally:
            await db.close()

    asyncio.run(main())


def test_archiving_the_default_project_hands_its_grants_to_no_other(tmp_path: Path) -> None:
    """The default project is the first one created: once it is archived, the next start
    neither gives a later project its roots and trust nor makes a new default."""
    data, home = tmp_path / "data", tmp_path / "home"
    for path in (data, home / "src"):
        path.mkdir(parents=True)

    async def main() -> None:
        db, clock, first = await default_and_another(data, archived=True)
        try:
            again = await ensure_default_project(db, Ids(clock), clock, data, "cbx-test-key")
            assert again.project_id == first.project_id and again.archived
            count = await db.read(lambda r: r.fetchone("SELECT COUNT(*) AS n FROM projects"))
            assert count is not None and count["n"] == 2
            grants = HostGrants(db, clock, (home,), data, {"kind": "none"})
            await grants.load()
            assert grants.refusal("proj_other", str(home / "src")) is not None
            assert not grants.commands_allowed("proj_other")
        finally:
            await db.close()

    asyncio.run(main())

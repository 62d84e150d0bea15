"""What each project may make the in-process Runtime touch on the host: the owner's grants.

Projects are trust boundaries and the Core key is the owner. A project's `self_hosted`
workspace directory must lie, after resolving symlinks, under one of its roots:

- the default project (the first one created): the configured `workspace_roots`
  (`corebox.toml`, `COREBOX_WORKSPACE_ROOTS`, `--workspace-root`; default the home
  directory) and any roots granted to it;
- every other project: only the roots the owner granted it (`corebox projects
  grant-root`).

No workspace ever lies inside the data directory or contains it. Commands run confined
wherever the host allows (`confinement`); where nothing confines them, only trusted
projects may run commands (the default project, and those the owner trusted).

Grants are stored in the database and mirrored here, so checks need no read; the
mirror is loaded at start and changed only after the grant's commit.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from allinone.core.errors import InvalidRequest
from allinone.core.ids import Clock
from storage import tenancy
from storage.database import Database, Tx

WORKSPACE_ROOT = "workspace_root"
TRUSTED = "trusted"


def real(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class HostGrants:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        configured_roots: Sequence[Path],
        data_dir: Path,
        confinement: dict[str, Any],
    ) -> None:
        self._db = db
        self._clock = clock
        self._configured = tuple(real(root) for root in configured_roots)
        self._data_dir = real(data_dir)
        self.confinement = dict(confinement)
        self._default: str | None = None
        self._roots: dict[str, set[str]] = {}
        self._trusted: set[str] = set()

    async def load(self) -> None:
        """Read the default project and every grant (call once at start)."""
        default = await self._db.read(tenancy.default_project)
        self._default = None if default is None else str(default["id"])
        self._roots, self._trusted = {}, set()
        for row in await self._db.read(tenancy.host_grants):
            self._remember(row["project_id"], row["kind"], row["path"])

    def _remember(self, project_id: str, kind: str, path: str) -> None:
        if kind == TRUSTED:
            self._trusted.add(project_id)
        else:
            self._roots.setdefault(project_id, set()).add(path)

    @property
    def confined(self) -> bool:
        return str(self.confinement.get("kind", "none")) != "none"

    def roots_of(self, project_id: str) -> list[str]:
        granted = sorted(self._roots.get(project_id, set()))
        if project_id == self._default:
            return [*(str(root) for root in self._configured), *granted]
        return granted

    def trusted(self, project_id: str) -> bool:
        return project_id == self._default or project_id in self._trusted

    def commands_allowed(self, project_id: str) -> bool:
        """Whether the project's commands may run: always where they are confined."""
        return self.confined or self.trusted(project_id)

    def all_roots(self) -> tuple[Path, ...]:
        """Every root some project may use: what the in-process Runtime serves."""
        granted = {Path(path) for paths in self._roots.values() for path in paths}
        return (*self._configured, *sorted(granted))

    def refusal(self, project_id: str, directory: str) -> str | None:
        """Why `directory` (resolved) is not a workspace the project may use, or None when
        it lies under one of the project's roots and neither inside nor around the data
        directory."""
        path = Path(directory)
        if not path.is_absolute() or ".." in path.parts:
            return "workspace_directory must be an absolute path without '..'."
        resolved = real(path)
        if within(resolved, self._data_dir) or within(self._data_dir, resolved):
            return "workspace_directory may not include corebox's data directory."
        if not any(within(resolved, Path(root)) for root in self.roots_of(project_id)):
            return (
                "workspace_directory is outside the directories this project may use; the"
                " server's owner grants them (corebox projects grant-root)."
            )
        return None

    def check_directory(self, project_id: str, directory: str, param: str) -> None:
        """Raise a 400 unless the project may use `directory` (see `refusal`)."""
        reason = self.refusal(project_id, directory)
        if reason is not None:
            raise InvalidRequest(reason, param)

    def check_grantable(self, directory: str) -> Path:
        """The resolved root to grant, refused when it is relative or touches the data
        directory."""
        path = Path(directory)
        if not path.is_absolute() or ".." in path.parts:
            raise InvalidRequest("path must be an absolute path without '..'.", "path")
        resolved = real(path)
        if within(resolved, self._data_dir) or within(self._data_dir, resolved):
            raise InvalidRequest("path may not include corebox's data directory.", "path")
        return resolved

    async def grant(self, project_id: str, kind: str, path: str = "") -> None:
        async def job(tx: Tx) -> None:
            await tenancy.grant(tx, project_id, kind, path, self._clock.now())

        await self._db.write(job)
        self._remember(project_id, kind, path)

    async def revoke(self, project_id: str, kind: str, path: str = "") -> None:
        async def job(tx: Tx) -> None:
            await tenancy.revoke_grant(tx, project_id, kind, path)

        await self._db.write(job)
        if kind == TRUSTED:
            self._trusted.discard(project_id)
        else:
            self._roots.get(project_id, set()).discard(path)

    def view(self, project_id: str) -> dict[str, Any]:
        return {
            "object": "project.host_grants",
            "project_id": project_id,
            "workspace_roots": self.roots_of(project_id),
            "granted_workspace_roots": sorted(self._roots.get(project_id, set())),
            "trusted": self.trusted(project_id),
            "commands_allowed": self.commands_allowed(project_id),
            "confinement": self.confinement,
        }

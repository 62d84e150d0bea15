"""The skills of a project: each has immutable, numbered versions (numbers are never
reused), a default version and a latest version. Creating a skill makes version 1;
a new version may become the default. The default version cannot be deleted while
another version exists; deleting a skill deletes every version.

Environments name skills by `skill_reference` (a version, or the default) or carry
them inline; `resolve` turns either into what a workspace installs: a name, a
description and a bundle.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from functools import partial
from typing import Any

from allinone.core.errors import InvalidRequest, NotFound
from allinone.core.ids import Clock, Ids
from allinone.core.numbers import whole_number
from allinone.core.skills import bodies
from allinone.core.skills.bundles import MAX_UPLOAD_BYTES, Bundle, normalise
from storage import skills as rows
from storage.database import Database, Tx

MAX_SKILLS_PER_ENVIRONMENT = 50


@dataclass(frozen=True)
class Installed:
    """A skill as a workspace installs it, and as an environment shows it. An inline
    skill carries its bundle; a referenced one names the stored bundle by digest (read
    with `bundle` when the workspace is prepared)."""

    name: str
    description: str
    public: dict[str, Any]
    archive: bytes | None = None
    sha256: str | None = None

    def secret(self) -> dict[str, str]:
        """What an environment keeps (sealed) to install the skill later."""
        kept = {"name": self.name, "description": self.description}
        if self.archive is not None:
            kept["data"] = base64.b64encode(self.archive).decode()
        else:
            kept["sha256"] = str(self.sha256)
        return kept


def version_number(raw: str | int | None, param: str = "version") -> int:
    """A version as the API names it ("1", 1, or "latest" is not accepted here)."""
    number = whole_number("" if raw is None else str(raw), 1, 2**31)
    if number is None:
        raise NotFound(param=param)
    return number


class Catalog:
    def __init__(self, db: Database, ids: Ids, clock: Clock) -> None:
        self._db = db
        self._ids = ids
        self._clock = clock

    async def create(self, project_id: str, bundle: Bundle) -> dict[str, Any]:
        skill_id = self._ids.new("skill")
        now = self._clock.now()

        async def job(tx: Tx) -> None:
            await rows.insert(
                tx,
                {
                    "id": skill_id,
                    "project_id": project_id,
                    "name": bundle.name,
                    "description": bundle.description,
                    "created_at": now,
                },
            )
            await self._add_version(tx, skill_id, 1, bundle, now)

        await self._db.write(job)
        return await self.skill(project_id, skill_id)

    async def _add_version(
        self, tx: Tx, skill_id: str, number: int, bundle: Bundle, now: int
    ) -> None:
        digest = await bodies.put(tx, bundle.archive)
        await rows.insert_version(
            tx,
            {
                "id": self._ids.new("skillver"),
                "skill_id": skill_id,
                "version": number,
                "name": bundle.name,
                "description": bundle.description,
                "sha256": digest,
                "size_bytes": len(bundle.archive),
                "created_at": now,
            },
        )

    async def add_version(
        self, project_id: str, skill_id: str, bundle: Bundle, make_default: bool
    ) -> dict[str, Any]:
        await self.skill(project_id, skill_id)
        now = self._clock.now()

        async def job(tx: Tx) -> int:
            skill = await rows.get_for_change(tx, project_id, skill_id)
            if skill is None:
                raise NotFound()
            number = await rows.take_version_number(tx, skill_id)
            await self._add_version(tx, skill_id, number, bundle, now)
            default = number if make_default else int(skill["default_version"])
            await self._point(tx, skill_id, default)
            return number

        number = await self._db.write(job)
        return await self.version(project_id, skill_id, number)

    async def _point(self, tx: Tx, skill_id: str, default: int) -> None:
        versions = await rows.versions(tx, skill_id)
        shown = next(v for v in versions if v["version"] == default)
        await rows.set_pointers(
            tx,
            skill_id,
            default=default,
            latest=max(v["version"] for v in versions),
            name=shown["name"],
            description=shown["description"],
        )

    async def skill(self, project_id: str, skill_id: str) -> dict[str, Any]:
        row = await self._db.read(partial(rows.get, project_id=project_id, skill_id=skill_id))
        if row is None:
            raise NotFound()
        return row

    async def version(self, project_id: str, skill_id: str, number: int) -> dict[str, Any]:
        await self.skill(project_id, skill_id)
        row = await self._db.read(partial(rows.version, skill_id=skill_id, number=number))
        if row is None:
            raise NotFound()
        return row

    async def set_default(self, project_id: str, skill_id: str, number: int) -> dict[str, Any]:
        await self.version(project_id, skill_id, number)

        async def job(tx: Tx) -> None:
            if await rows.get_for_change(tx, project_id, skill_id) is None:
                raise NotFound()
            if await rows.version(tx, skill_id, number) is None:
                raise NotFound()
            await self._point(tx, skill_id, number)

        await self._db.write(job)
        return await self.skill(project_id, skill_id)

    async def delete(self, project_id: str, skill_id: str) -> None:
        await self.skill(project_id, skill_id)

        async def job(tx: Tx) -> None:
            for digest in await rows.delete(tx, skill_id):
                await bodies.release(tx, digest)

        await self._db.write(job)

    async def delete_version(self, project_id: str, skill_id: str, number: int) -> dict[str, Any]:
        """Delete one version (never the default one); return what was deleted."""
        await self.version(project_id, skill_id, number)

        async def job(tx: Tx) -> dict[str, Any]:
            skill = await rows.get_for_change(tx, project_id, skill_id)
            found = await rows.version(tx, skill_id, number)
            if skill is None or found is None:
                raise NotFound()
            if int(skill["default_version"]) == number:
                raise InvalidRequest(
                    "The default version cannot be deleted; make another version the default"
                    " first, or delete the skill.",
                    "version",
                )
            await rows.delete_version(tx, skill_id, number)
            await bodies.release(tx, found["sha256"])
            await self._point(tx, skill_id, int(skill["default_version"]))
            return found

        return await self._db.write(job)

    async def bundle(self, kept: dict[str, str]) -> bytes | None:
        """The bundle of a skill an environment kept (`Installed.secret`); None when a
        referenced version's bundle is gone (its skill or version was deleted)."""
        if "data" in kept:
            return base64.b64decode(kept["data"])
        return await self._db.read(partial(bodies.get, digest=kept["sha256"]))

    async def archive(self, project_id: str, skill_id: str, number: int | None) -> bytes:
        """A version's bundle (the default version when `number` is None)."""
        if number is None:
            number = int((await self.skill(project_id, skill_id))["default_version"])
        found = await self.version(project_id, skill_id, number)
        data = await self._db.read(partial(bodies.get, digest=found["sha256"]))
        if data is None:
            raise NotFound()
        return data

    async def resolve(
        self, project_id: str, entries: list[dict[str, Any]], param: str
    ) -> list[Installed]:
        """An environment's `skills` entries as the workspace installs them. Names are
        unique within one environment."""
        if len(entries) > MAX_SKILLS_PER_ENVIRONMENT:
            raise InvalidRequest("An environment may hold at most 50 skills.", param)
        installed: list[Installed] = []
        for index, entry in enumerate(entries):
            where = f"{param}[{index}]"
            if entry.get("type") == "skill_reference":
                installed.append(await self._referenced(project_id, entry, where))
            else:
                installed.append(_inline(entry, where))
        names = [skill.name for skill in installed]
        if len(set(names)) != len(names):
            raise InvalidRequest("Two skills of one environment share a name.", param)
        return installed

    async def _referenced(self, project_id: str, entry: dict[str, Any], where: str) -> Installed:
        skill_id = str(entry.get("skill_id") or "")
        skill = await self._db.read(partial(rows.get, project_id=project_id, skill_id=skill_id))
        if skill is None:
            raise NotFound(param=f"{where}.skill_id")
        wanted = entry.get("version")
        number = (
            int(skill["default_version"])
            if wanted in (None, "", "default")
            else int(skill["latest_version"])
            if wanted == "latest"
            else version_number(wanted, f"{where}.version")
        )
        found = await self._db.read(partial(rows.version, skill_id=skill_id, number=number))
        if found is None:
            raise NotFound(param=f"{where}.version")
        public = {
            "type": "skill_reference",
            "skill_id": skill_id,
            "name": found["name"],
            "description": found["description"],
            "version": str(number),
        }
        return Installed(found["name"], found["description"], public, sha256=found["sha256"])


def _inline(entry: dict[str, Any], where: str) -> Installed:
    source = entry.get("source") or {}
    try:
        data = base64.b64decode(str(source.get("data", "")), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequest(
            "source.data must be standard base64.", f"{where}.source.data"
        ) from exc
    if len(data) > MAX_UPLOAD_BYTES:
        raise InvalidRequest("A skill may be at most 5 MiB.", f"{where}.source.data")
    bundle = normalise([("skill.zip", data)], f"{where}.source.data")
    name, description = str(entry.get("name") or ""), str(entry.get("description") or "")
    if name != bundle.name:
        raise InvalidRequest("name must match the name in the skill's SKILL.md.", f"{where}.name")
    public = {"type": "inline", "name": name, "description": description or bundle.description}
    return Installed(name, public["description"], public, archive=bundle.archive)

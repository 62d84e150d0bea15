"""`/v1/skills` resources, as the official SDK's `Skill`, `SkillVersion` and deletion
types read them. Version numbers are strings on the wire."""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class Skill(msgspec.Struct):
    id: str
    created_at: int
    default_version: str
    description: str
    latest_version: str
    name: str
    object: Literal["skill"] = "skill"


class SkillVersion(msgspec.Struct):
    id: str
    created_at: int
    description: str
    name: str
    skill_id: str
    version: str
    object: Literal["skill.version"] = "skill.version"


class DeletedSkill(msgspec.Struct):
    id: str
    deleted: bool
    object: Literal["skill.deleted"] = "skill.deleted"


class DeletedSkillVersion(msgspec.Struct):
    id: str
    deleted: bool
    version: str
    object: Literal["skill.version.deleted"] = "skill.version.deleted"


class SkillUpdate(msgspec.Struct, forbid_unknown_fields=True):
    default_version: str


def skill(row: dict[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = msgspec.to_builtins(
        Skill(
            id=row["id"],
            created_at=row["created_at"],
            default_version=str(row["default_version"]),
            description=row["description"],
            latest_version=str(row["latest_version"]),
            name=row["name"],
        )
    )
    return shown


def version(row: dict[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = msgspec.to_builtins(
        SkillVersion(
            id=row["id"],
            created_at=row["created_at"],
            description=row["description"],
            name=row["name"],
            skill_id=row["skill_id"],
            version=str(row["version"]),
        )
    )
    return shown

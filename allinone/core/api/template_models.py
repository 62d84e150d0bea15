"""Environment template shapes (reference 4.4 / 5.5) and the hosted-environment pieces
they share with session environments: files, network, packages, plugins, skills.

Confidential inputs (`env`, `setup_commands`, inline `data` and capability `source`)
appear only in request bodies; the resource has no field that could carry them.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

_STRICT: dict[str, Any] = {"forbid_unknown_fields": True}
_TAGGED: dict[str, Any] = {"forbid_unknown_fields": True, "tag_field": "type"}
NetworkAccess = Literal["enabled", "disabled", "restricted"]


class FileIdFileParam(msgspec.Struct, tag="file_id", **_TAGGED):
    file_id: str
    path: str


class InlineFileParam(msgspec.Struct, tag="inline", **_TAGGED):
    data: str
    path: str


class InlineSourceParam(msgspec.Struct, **_STRICT):
    type: Literal["base64"]
    media_type: Literal["application/zip"]
    data: str


class InlinePluginParam(msgspec.Struct, **_STRICT):
    type: Literal["inline"]
    name: str
    description: str
    source: InlineSourceParam


class SkillReferenceParam(msgspec.Struct, tag="skill_reference", **_TAGGED):
    skill_id: str
    version: str | UnsetType | None = UNSET


class InlineSkillParam(msgspec.Struct, tag="inline", **_TAGGED):
    name: str
    description: str
    source: InlineSourceParam


class DesktopParam(msgspec.Struct, **_STRICT):
    enabled: bool


class NetworkParam(msgspec.Struct, **_STRICT):
    access: NetworkAccess
    allowed_domains: list[str] | UnsetType | None = UNSET
    blocked_domains: list[str] | UnsetType | None = UNSET


class PackagesParam(msgspec.Struct, **_STRICT):
    npm: list[str] | UnsetType | None = UNSET
    python: list[str] | UnsetType | None = UNSET
    system: list[str] | UnsetType | None = UNSET


class SetupCommandParam(msgspec.Struct, **_STRICT):
    command: str
    cwd: str | UnsetType | None = UNSET


class TemplateBody(msgspec.Struct, **_STRICT):
    """Create and update; on update an omitted field keeps its value."""

    name: str | UnsetType | None = UNSET
    capability_directories: list[str] | UnsetType | None = UNSET
    desktop: DesktopParam | UnsetType | None = UNSET
    env: dict[str, str] | UnsetType | None = UNSET
    files: list[FileIdFileParam | InlineFileParam] | UnsetType | None = UNSET
    network: NetworkParam | UnsetType | None = UNSET
    packages: PackagesParam | UnsetType | None = UNSET
    plugins: list[InlinePluginParam] | UnsetType | None = UNSET
    setup_commands: list[SetupCommandParam] | UnsetType | None = UNSET
    skills: list[SkillReferenceParam | InlineSkillParam] | UnsetType | None = UNSET


# --- resources ---------------------------------------------------------------------------


class FileIdFile(msgspec.Struct, tag="file_id", tag_field="type"):
    file_id: str
    path: str


class InlineFile(msgspec.Struct, tag="inline", tag_field="type"):
    path: str
    size_bytes: int


class Network(msgspec.Struct):
    access: NetworkAccess
    allowed_domains: list[str]


class Packages(msgspec.Struct):
    npm: list[str]
    python: list[str]
    system: list[str]


class HostedPlugin(msgspec.Struct):
    type: Literal["inline"]
    name: str
    description: str


class SkillReference(msgspec.Struct, tag="skill_reference", tag_field="type"):
    skill_id: str
    version: str | None


class InlineSkill(msgspec.Struct, tag="inline", tag_field="type"):
    name: str
    description: str


class Desktop(msgspec.Struct):
    enabled: bool


class EnvironmentTemplate(msgspec.Struct):
    id: str
    name: str | None
    created_at: int
    updated_at: int
    capability_directories: list[str]
    files: list[FileIdFile | InlineFile]
    network: Network
    packages: Packages
    plugins: list[HostedPlugin]
    skills: list[SkillReference | InlineSkill]
    desktop: Desktop | None
    object: Literal["agent.environment.template"] = "agent.environment.template"


class EnvironmentTemplateDeleted(msgspec.Struct):
    id: str
    deleted: bool = True
    object: Literal["agent.environment.template.deleted"] = "agent.environment.template.deleted"


def template(row: dict[str, Any]) -> EnvironmentTemplate:
    body = dict(row["config"])
    body.update(
        id=row["id"], name=row["name"], created_at=row["created_at"], updated_at=row["updated_at"]
    )
    return msgspec.convert(body, EnvironmentTemplate)

"""Environment template shapes (reference 4.4 / 5.5) and the hosted-environment pieces
they share with session environments: files, network, packages, plugins, skills.

Confidential inputs (`env`, `setup_commands`, inline `data` and capability `source`)
appear only in request bodies; the resource has no field that could carry them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from allinone.core.shapes.showing import shown

_STRICT: dict[str, Any] = {"forbid_unknown_fields": True}
_TAGGED: dict[str, Any] = {"forbid_unknown_fields": True, "tag_field": "type"}
NetworkAccess = Literal["enabled", "disabled", "restricted"]

# Bounds of what a request may carry, so every stored value is one the rest of corebox
# (renderers, the Runtime's set-up, subprocess arguments) can hold.
MAX_TEXT = 64 * 1024
MAX_PATH = 4096
MAX_ENTRIES = 256
MAX_FILES = 1000


Text = Annotated[str, msgspec.Meta(max_length=MAX_TEXT)]
NoNul = Annotated[str, msgspec.Meta(pattern=r"^[^\x00]*$", max_length=MAX_TEXT)]
Path = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PATH)]
EnvName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=256)]
PackageName = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
Domain = Annotated[str, msgspec.Meta(min_length=1, max_length=253)]
Packages_ = Annotated[list[PackageName], msgspec.Meta(max_length=MAX_ENTRIES)]
Domains = Annotated[list[Domain], msgspec.Meta(max_length=MAX_ENTRIES)]
Directories = Annotated[list[Path], msgspec.Meta(max_length=64)]
Env = Annotated[dict[EnvName, NoNul], msgspec.Meta(max_length=MAX_ENTRIES)]


class FileIdFileParam(msgspec.Struct, tag="file_id", **_TAGGED):
    file_id: Text
    path: Path


class InlineFileParam(msgspec.Struct, tag="inline", **_TAGGED):
    data: str
    path: Path


FileParam = FileIdFileParam | InlineFileParam
Files = Annotated[list[FileParam], msgspec.Meta(max_length=MAX_FILES)]


class InlineSourceParam(msgspec.Struct, **_STRICT):
    type: Literal["base64"]
    media_type: Literal["application/zip"]
    data: str


class InlinePluginParam(msgspec.Struct, **_STRICT):
    type: Literal["inline"]
    name: Text
    description: Text
    source: InlineSourceParam


class SkillReferenceParam(msgspec.Struct, tag="skill_reference", **_TAGGED):
    skill_id: Text
    version: Text | UnsetType | None = UNSET


class InlineSkillParam(msgspec.Struct, tag="inline", **_TAGGED):
    name: Text
    description: Text
    source: InlineSourceParam


class DesktopParam(msgspec.Struct, **_STRICT):
    enabled: bool


class NetworkParam(msgspec.Struct, **_STRICT):
    access: NetworkAccess
    allowed_domains: Domains | UnsetType | None = UNSET
    blocked_domains: Domains | UnsetType | None = UNSET


class PackagesParam(msgspec.Struct, **_STRICT):
    npm: Packages_ | UnsetType | None = UNSET
    python: Packages_ | UnsetType | None = UNSET
    system: Packages_ | UnsetType | None = UNSET


class SetupCommandParam(msgspec.Struct, **_STRICT):
    command: NoNul
    cwd: (
        Annotated[str, msgspec.Meta(pattern=r"^[^\x00]*$", max_length=MAX_PATH)] | UnsetType | None
    ) = UNSET


SetupCommands = Annotated[list[SetupCommandParam], msgspec.Meta(max_length=MAX_ENTRIES)]
Plugins = Annotated[list[InlinePluginParam], msgspec.Meta(max_length=MAX_ENTRIES)]
Skills = Annotated[
    list[SkillReferenceParam | InlineSkillParam], msgspec.Meta(max_length=MAX_ENTRIES)
]


# --- environments in request bodies (sessions, environments, automation targets) -------


class NoneEnvironmentParam(msgspec.Struct, tag="none", **_TAGGED):
    pass


class HostedEnvironmentParam(msgspec.Struct, tag="openai_hosted", **_TAGGED):
    environment_id: Text | UnsetType = UNSET
    environment_template_id: Text | UnsetType = UNSET
    container_size: Literal["small", "medium", "large"] | UnsetType = UNSET
    capability_directories: Directories | UnsetType | None = UNSET
    desktop: DesktopParam | UnsetType | None = UNSET
    env: Env | UnsetType | None = UNSET
    files: Files | UnsetType | None = UNSET
    network: NetworkParam | UnsetType | None = UNSET
    packages: PackagesParam | UnsetType | None = UNSET
    plugins: Plugins | UnsetType | None = UNSET
    setup_commands: SetupCommands | UnsetType | None = UNSET
    skills: Skills | UnsetType | None = UNSET


class SelfHostedEnvironmentParam(msgspec.Struct, tag="self_hosted", **_TAGGED):
    workspace_directory: Path
    capability_directories: Directories | UnsetType | None = UNSET


EnvironmentParam = NoneEnvironmentParam | HostedEnvironmentParam | SelfHostedEnvironmentParam


class TemplateBody(msgspec.Struct, **_STRICT):
    """Create and update; on update an omitted field keeps its value."""

    name: Text | UnsetType | None = UNSET
    capability_directories: Directories | UnsetType | None = UNSET
    desktop: DesktopParam | UnsetType | None = UNSET
    env: Env | UnsetType | None = UNSET
    files: Files | UnsetType | None = UNSET
    network: NetworkParam | UnsetType | None = UNSET
    packages: PackagesParam | UnsetType | None = UNSET
    plugins: Plugins | UnsetType | None = UNSET
    setup_commands: SetupCommands | UnsetType | None = UNSET
    skills: Skills | UnsetType | None = UNSET


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
    return shown(body, EnvironmentTemplate, TEMPLATE_DEFAULTS, TEMPLATE_ELEMENTS)


# What a stored template field the resource cannot show is shown as (see `showing`).
TEMPLATE_DEFAULTS: dict[str, Any] = {
    "capability_directories": [],
    "files": [],
    "network": {"access": "enabled", "allowed_domains": []},
    "packages": {"npm": [], "python": [], "system": []},
    "plugins": [],
    "skills": [],
    "desktop": None,
}
TEMPLATE_ELEMENTS: dict[str, Any] = {
    "files": FileIdFile | InlineFile,
    "plugins": HostedPlugin,
    "skills": SkillReference | InlineSkill,
}

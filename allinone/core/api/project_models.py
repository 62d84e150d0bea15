"""`/core/v1` shapes: projects and project API keys (request bodies and resources)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

_STRICT: dict[str, Any] = {"forbid_unknown_fields": True}
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class ProjectCreate(msgspec.Struct, **_STRICT):
    name: Name


class ApiKeyCreate(msgspec.Struct, **_STRICT):
    name: Name | UnsetType | None = UNSET


class Project(msgspec.Struct):
    id: str
    name: str
    created_at: int
    archived_at: int | None
    status: Literal["active", "archived"]
    object: Literal["project"] = "project"


class ApiKey(msgspec.Struct):
    """A project key as listed: never the key itself, only its first characters."""

    id: str
    project_id: str
    name: str | None
    prefix: str
    created_at: int
    revoked_at: int | None
    status: Literal["active", "revoked"]
    object: Literal["project.api_key"] = "project.api_key"


class IssuedApiKey(msgspec.Struct):
    """The answer to issuing a key: the only time `key` is ever shown."""

    id: str
    project_id: str
    name: str | None
    prefix: str
    created_at: int
    revoked_at: int | None
    status: Literal["active", "revoked"]
    key: str
    object: Literal["project.api_key"] = "project.api_key"


def project(row: dict[str, Any]) -> Project:
    return Project(
        id=row["id"],
        name=row["name"],
        created_at=row["created_at"],
        archived_at=row["archived_at"],
        status="archived" if row["archived_at"] is not None else "active",
    )


def api_key(row: dict[str, Any]) -> ApiKey:
    return ApiKey(
        id=row["id"],
        project_id=row["project_id"],
        name=row.get("name"),
        prefix=row["prefix"],
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
        status="revoked" if row["revoked_at"] is not None else "active",
    )


HostPath = Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]


class WorkspaceRootChange(msgspec.Struct, **_STRICT):
    """Grant or revoke one host directory under which the project's `self_hosted`
    workspaces may lie."""

    path: HostPath


class TrustChange(msgspec.Struct, **_STRICT):
    """Whether the project may run commands where no confinement is available."""

    trusted: bool


class Confinement(msgspec.Struct):
    kind: Literal["landlock", "bubblewrap", "none"]
    abi: int | UnsetType = UNSET


class HostGrants(msgspec.Struct):
    """What the owner granted a project on the host running the in-process Runtime."""

    project_id: str
    workspace_roots: list[str]
    granted_workspace_roots: list[str]
    trusted: bool
    commands_allowed: bool
    confinement: Confinement
    object: Literal["project.host_grants"] = "project.host_grants"

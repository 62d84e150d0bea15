"""`/v1/vaults` shapes: vault and credential request bodies (strict) and resources.

Secrets (`access_token`, `refresh_token`, `client_secret`, `token`, `secret_value`)
appear only in request bodies; no resource here has a field that could carry one.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

Metadata = dict[str, str]
Secret = Annotated[str, msgspec.Meta(min_length=1)]
_STRICT: dict[str, Any] = {"forbid_unknown_fields": True}
_TAGGED: dict[str, Any] = {"forbid_unknown_fields": True, "tag_field": "type"}


class VaultCreate(msgspec.Struct, **_STRICT):
    name: str | UnsetType = UNSET
    metadata: Metadata | UnsetType | None = UNSET


class VaultUpdate(msgspec.Struct, **_STRICT):
    name: str | UnsetType | None = UNSET
    metadata: Metadata | UnsetType = UNSET


class TokenEndpointAuthNoneParam(msgspec.Struct, tag="none", **_TAGGED):
    pass


class ClientSecretBasicParam(msgspec.Struct, tag="client_secret_basic", **_TAGGED):
    client_secret: Secret


class ClientSecretPostParam(msgspec.Struct, tag="client_secret_post", **_TAGGED):
    client_secret: Secret


class McpOauthRefreshParam(msgspec.Struct, **_STRICT):
    client_id: str
    refresh_token: Secret
    token_endpoint: str
    token_endpoint_auth: TokenEndpointAuthNoneParam | ClientSecretBasicParam | ClientSecretPostParam
    resource: str | UnsetType | None = UNSET
    scope: str | UnsetType | None = UNSET


class McpOauthAuthParam(msgspec.Struct, tag="mcp_oauth", **_TAGGED):
    access_token: Secret
    mcp_server_url: str
    expires_at: str | UnsetType | None = UNSET
    refresh: McpOauthRefreshParam | UnsetType | None = UNSET


class StaticBearerAuthParam(msgspec.Struct, tag="static_bearer", **_TAGGED):
    token: Secret
    mcp_server_url: str


class CredentialNetworkingUnrestricted(msgspec.Struct, tag="unrestricted", **_TAGGED):
    pass


class CredentialNetworkingLimited(msgspec.Struct, tag="limited", **_TAGGED):
    allowed_hosts: list[str]


CredentialNetworking = CredentialNetworkingUnrestricted | CredentialNetworkingLimited


class EnvironmentVariableAuthParam(msgspec.Struct, tag="environment_variable", **_TAGGED):
    secret_name: str
    secret_value: Secret
    networking: CredentialNetworking


CredentialAuthParam = McpOauthAuthParam | StaticBearerAuthParam | EnvironmentVariableAuthParam


class CredentialCreate(msgspec.Struct, **_STRICT):
    name: str
    auth: CredentialAuthParam
    metadata: Metadata | UnsetType = UNSET


class RotateClientSecretBasicParam(msgspec.Struct, tag="client_secret_basic", **_TAGGED):
    client_secret: Secret | UnsetType | None = UNSET


class RotateClientSecretPostParam(msgspec.Struct, tag="client_secret_post", **_TAGGED):
    client_secret: Secret | UnsetType | None = UNSET


class RotateMcpOauthRefreshParam(msgspec.Struct, **_STRICT):
    refresh_token: Secret | UnsetType | None = UNSET
    scope: str | UnsetType | None = UNSET
    token_endpoint_auth: (
        RotateClientSecretBasicParam | RotateClientSecretPostParam | UnsetType | None
    ) = UNSET


class RotateMcpOauthParam(msgspec.Struct, tag="mcp_oauth", **_TAGGED):
    access_token: Secret | UnsetType | None = UNSET
    expires_at: str | UnsetType | None = UNSET
    refresh: RotateMcpOauthRefreshParam | UnsetType | None = UNSET


class RotateStaticBearerParam(msgspec.Struct, tag="static_bearer", **_TAGGED):
    token: Secret


class RotateEnvironmentVariableParam(msgspec.Struct, tag="environment_variable", **_TAGGED):
    secret_value: Secret


CredentialRotateParam = (
    RotateMcpOauthParam | RotateStaticBearerParam | RotateEnvironmentVariableParam
)


class CredentialUpdate(msgspec.Struct, **_STRICT):
    auth: CredentialRotateParam | UnsetType = UNSET
    metadata: Metadata | UnsetType = UNSET


# --- resources ---------------------------------------------------------------------------


class Vault(msgspec.Struct):
    id: str
    created_at: int
    metadata: dict[str, str]
    name: str | None
    object: Literal["vault"] = "vault"


class VaultDeleted(msgspec.Struct):
    id: str
    deleted: bool = True
    object: Literal["vault.deleted"] = "vault.deleted"


class TokenEndpointAuth(msgspec.Struct):
    type: Literal["none", "client_secret_basic", "client_secret_post"]


class McpOauthRefresh(msgspec.Struct):
    client_id: str
    token_endpoint: str
    token_endpoint_auth: TokenEndpointAuth
    resource: str | None
    scope: str | None


class McpOauthAuth(msgspec.Struct, tag="mcp_oauth", tag_field="type"):
    mcp_server_url: str
    expires_at: str | None
    refresh: McpOauthRefresh | None


class StaticBearerAuth(msgspec.Struct, tag="static_bearer", tag_field="type"):
    mcp_server_url: str


class EnvironmentVariableAuth(msgspec.Struct, tag="environment_variable", tag_field="type"):
    secret_name: str
    networking: CredentialNetworking


CredentialAuth = McpOauthAuth | StaticBearerAuth | EnvironmentVariableAuth


class Credential(msgspec.Struct):
    id: str
    vault_id: str
    name: str
    created_at: int
    updated_at: int
    metadata: dict[str, str]
    auth: CredentialAuth
    object: Literal["vault.credential"] = "vault.credential"


class CredentialDeleted(msgspec.Struct):
    id: str
    deleted: bool = True
    object: Literal["vault.credential.deleted"] = "vault.credential.deleted"


def vault(row: dict[str, Any]) -> Vault:
    return Vault(
        id=row["id"], created_at=row["created_at"], metadata=row["metadata"], name=row["name"]
    )


def credential(row: dict[str, Any]) -> Credential:
    return Credential(
        id=row["id"],
        vault_id=row["vault_id"],
        name=row["name"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        metadata=row["metadata"],
        auth=msgspec.convert(row["auth"], CredentialAuth),
    )

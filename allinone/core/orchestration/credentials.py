"""The secrets and corebox settings one execution carries, resolved just before
`execution_prepare` and never stored in it or logged.

- The model provider the session froze, with its API key opened (model_providers.py),
  and the model name to use with it.
- One `mcp_http_servers` entry per HTTP MCP tool of the session's agent, with the bearer
  token of the vault credential the tool names (`credential_id`: a `static_bearer`
  token or an `mcp_oauth` access token) and the tool's non-secret headers. A tool
  without `credential_id` uses the credential of the session's vaults whose
  `mcp_server_url` is the tool's server URL when exactly one matches (scheme and host
  compared case-insensitively, a default port and a trailing slash ignored); none
  means no authorization; several fail the turn, asking for `credential_id`. Inline
  `authorization` values are never stored (allinone/core/tools.py), so only vault
  credentials reach a server.
- `command_environment`: every `environment_variable` credential of the session's
  vaults, `secret_name` -> the secret (the first vault naming a variable wins), for
  the commands the Run starts in its workspace.
- The tool policy, sent as `harness_config.tool_policy`.

A credential that cannot be resolved raises ResolutionFailed with a message safe to
show; the turn then fails before anything is sent to a Runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from allinone.core.errors import CoreError
from allinone.core.model_providers import ModelProviders, ProviderUnavailable
from allinone.core.sealing import SealError
from allinone.core.vault_secrets import CredentialNotFound, VaultSecrets
from runtime.proto import execution as wire
from storage import execution_settings


class ResolutionFailed(CoreError):
    """An execution's secrets cannot be resolved; the message names what, never a value."""


@dataclass(frozen=True)
class Resolved:
    model: str | None = None
    model_provider: wire.ModelProvider | None = field(default=None, repr=False)
    mcp_http_servers: list[wire.MCPHTTPServer] | None = field(default=None, repr=False)
    harness_config: dict[str, Any] | None = None
    command_environment: dict[str, str] = field(default_factory=dict, repr=False)


class RunCredentials:
    def __init__(self, providers: ModelProviders, vault: VaultSecrets | None) -> None:
        self._providers = providers
        self._vault = vault

    async def resolve(self, session: dict[str, Any]) -> Resolved:
        settings = execution_settings.settings_of(session)
        model: str | None = None
        provider: wire.ModelProvider | None = None
        public = settings.get("model_provider")
        if public is not None:
            sealed = execution_settings.sealed_key_of(session)
            if sealed is None:
                raise ResolutionFailed("The session's model provider has no key.")
            try:
                provider = self._providers.open(public, sealed)
            except ProviderUnavailable as exc:
                raise ResolutionFailed(
                    "The session's model provider key cannot be opened with this vault key."
                ) from exc
            model = str(public.get("model") or "") or None
        attached = await self._attached(session)
        servers = await self._mcp_servers(session, attached)
        policy = settings.get("tool_policy")
        return Resolved(
            model=model,
            model_provider=provider,
            mcp_http_servers=servers,
            harness_config={"tool_policy": policy} if policy else None,
            command_environment=await self._variables(session["project_id"], attached),
        )

    async def _attached(self, session: dict[str, Any]) -> list[dict[str, Any]]:
        vault_ids = [str(v) for v in session.get("vault_ids") or []]
        if self._vault is None or not vault_ids:
            return []
        return await self._vault.attached(session["project_id"], vault_ids)

    async def _mcp_servers(
        self, session: dict[str, Any], attached: list[dict[str, Any]]
    ) -> list[wire.MCPHTTPServer] | None:
        servers: list[wire.MCPHTTPServer] = []
        for tool in session["agent"].get("tools") or []:
            transport = tool.get("transport") or {}
            if tool.get("type") != "mcp" or transport.get("type") != "http":
                continue
            label = str(tool.get("server_label") or "")
            credential_id = tool.get("credential_id") or _matching(
                attached, str(transport.get("server_url") or ""), label
            )
            token = ""
            if credential_id:
                token = await self._token(session["project_id"], str(credential_id), label)
            servers.append(
                wire.MCPHTTPServer(
                    connection_origin=tool.get("connection_origin") or "service",
                    server_label=label,
                    server_url=str(transport.get("server_url") or ""),
                    allowed_tools=tool.get("allowed_tools"),
                    required=bool(tool.get("required")),
                    bearer_token=token,
                    headers={str(k): str(v) for k, v in (transport.get("headers") or {}).items()},
                )
            )
        return servers or None

    async def _variables(self, project_id: str, attached: list[dict[str, Any]]) -> dict[str, str]:
        variables: dict[str, str] = {}
        vault = self._vault
        if vault is None:
            return variables
        for credential in attached:
            auth = credential["auth"]
            if auth.get("type") != "environment_variable" or auth["secret_name"] in variables:
                continue
            name = str(auth["secret_name"])
            try:
                opened = await vault.resolve(project_id, credential["id"])
            except CredentialNotFound:
                continue  # deleted since it was listed
            except SealError as exc:
                raise ResolutionFailed(
                    f"The credential for the variable {name} cannot be opened."
                ) from exc
            value = opened.secret.get("secret_value")
            if isinstance(value, str) and value:
                variables[name] = value
        return variables

    async def _token(self, project_id: str, credential_id: str, label: str) -> str:
        if self._vault is None:
            raise ResolutionFailed(f"No vault is available for the MCP server {label}.")
        try:
            credential = await self._vault.resolve(project_id, credential_id)
        except CredentialNotFound as exc:
            raise ResolutionFailed(f"The credential of the MCP server {label} is gone.") from exc
        except SealError as exc:
            raise ResolutionFailed(
                f"The credential of the MCP server {label} cannot be opened."
            ) from exc
        token = credential.secret.get("token") or credential.secret.get("access_token")
        if not isinstance(token, str) or not token:
            raise ResolutionFailed(
                f"The credential of the MCP server {label} is not a bearer credential."
            )
        return token


def _matching(attached: list[dict[str, Any]], server_url: str, label: str) -> str | None:
    """The one MCP credential of the session's vaults for `server_url`, or None."""
    wanted = _server_key(server_url)
    found = [
        c["id"]
        for c in attached
        if c["auth"].get("type") in ("static_bearer", "mcp_oauth")
        and _server_key(str(c["auth"].get("mcp_server_url") or "")) == wanted
    ]
    if len(found) > 1:
        raise ResolutionFailed(
            f"Several credentials of the session's vaults match the MCP server {label};"
            " name one with credential_id."
        )
    return found[0] if found else None


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _server_key(url: str) -> tuple[str, str, int | None, str, str]:
    """What two server URLs must share to name the same server."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    if port == _DEFAULT_PORTS.get(scheme):
        port = None
    return scheme, (parts.hostname or "").lower(), port, parts.path.rstrip("/"), parts.query

"""Vault credential authentication: validation, and the split of each method into a
public description (stored as JSON, returned) and its secrets (sealed, never returned).

    method                public                                          secret
    static_bearer         mcp_server_url                                  token
    mcp_oauth             mcp_server_url, expires_at, refresh (client_id, access_token,
                          token_endpoint, token_endpoint_auth.type,       refresh_token,
                          resource, scope)                                client_secret
    environment_variable  secret_name, networking                         secret_value

Errors are 400s naming the offending field; no message ever quotes a secret.
"""

from __future__ import annotations

import ipaddress
import re
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import msgspec
from msgspec import UNSET

from allinone.core.errors import InvalidRequest
from allinone.core.shapes import vault_models as m

SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_NAMES = frozenset(
    {
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "CURL_CA_BUNDLE",
    }
)
HOST = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
LOOPBACK = ("localhost", "127.0.0.1", "::1")


def tag(value: msgspec.Struct) -> str:
    """The `type` tag of a tagged Struct."""
    return str(value.__struct_config__.tag)


def check_name(name: str, param: str = "name") -> str:
    """Trimmed; 1-256 UTF-8 bytes."""
    trimmed = name.strip()
    if not 1 <= len(trimmed.encode()) <= 256:
        raise InvalidRequest(f"{param} must contain 1 to 256 UTF-8 bytes after trimming.", param)
    return trimmed


def split(auth: m.CredentialAuthParam) -> tuple[dict[str, Any], dict[str, Any]]:
    """(public, secret) for a new credential."""
    if isinstance(auth, m.StaticBearerAuthParam):
        url = _url(auth.mcp_server_url, "auth.mcp_server_url")
        return {"type": "static_bearer", "mcp_server_url": url}, {"token": auth.token}
    if isinstance(auth, m.EnvironmentVariableAuthParam):
        _secret_value(auth.secret_value, "auth.secret_value")
        described = {
            "type": "environment_variable",
            "secret_name": _secret_name(auth.secret_name),
            "networking": _networking(auth.networking),
        }
        return described, {"secret_value": auth.secret_value}
    public: dict[str, Any] = {
        "type": "mcp_oauth",
        "mcp_server_url": _url(auth.mcp_server_url, "auth.mcp_server_url"),
        "expires_at": _expiry(auth.expires_at),
        "refresh": None,
    }
    secret: dict[str, Any] = {"access_token": auth.access_token}
    if isinstance(auth.refresh, m.McpOauthRefreshParam):
        refresh = auth.refresh
        endpoint = refresh.token_endpoint_auth
        public["refresh"] = {
            "client_id": refresh.client_id,
            "token_endpoint": _url(
                refresh.token_endpoint, "auth.refresh.token_endpoint", https=True
            ),
            "token_endpoint_auth": {"type": tag(endpoint)},
            "resource": None if refresh.resource is UNSET else refresh.resource,
            "scope": None if refresh.scope is UNSET else refresh.scope,
        }
        secret["refresh_token"] = refresh.refresh_token
        if not isinstance(endpoint, m.TokenEndpointAuthNoneParam):
            secret["client_secret"] = endpoint.client_secret
    return public, secret


def rotate(
    public: dict[str, Any], secret: dict[str, Any], auth: m.CredentialRotateParam
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(public, secret) after rotating the existing method; the method cannot change."""
    kind = public["type"]
    wanted = {
        m.RotateMcpOauthParam: "mcp_oauth",
        m.RotateStaticBearerParam: "static_bearer",
        m.RotateEnvironmentVariableParam: "environment_variable",
    }[type(auth)]
    if wanted != kind:
        raise InvalidRequest(
            f"auth.type must stay {kind!r}; create a new credential instead.", "auth"
        )
    public, secret = dict(public), dict(secret)
    if isinstance(auth, m.RotateStaticBearerParam):
        secret["token"] = auth.token
        return public, secret
    if isinstance(auth, m.RotateEnvironmentVariableParam):
        _secret_value(auth.secret_value, "auth.secret_value")
        secret["secret_value"] = auth.secret_value
        return public, secret
    if isinstance(auth.access_token, str):
        secret["access_token"] = auth.access_token
        public["expires_at"] = None
    if auth.expires_at is not UNSET:
        public["expires_at"] = _expiry(auth.expires_at)
    if auth.refresh is None:
        public["refresh"] = None
        secret.pop("refresh_token", None)
        secret.pop("client_secret", None)
    elif isinstance(auth.refresh, m.RotateMcpOauthRefreshParam):
        _rotate_refresh(public, secret, auth.refresh)
    return public, secret


def _rotate_refresh(
    public: dict[str, Any], secret: dict[str, Any], refresh: m.RotateMcpOauthRefreshParam
) -> None:
    current = public.get("refresh")
    if current is None:
        raise InvalidRequest(
            "This credential has no refresh configuration to rotate.", "auth.refresh"
        )
    current = dict(current)
    if isinstance(refresh.refresh_token, str):
        secret["refresh_token"] = refresh.refresh_token
    if refresh.scope is not UNSET:
        current["scope"] = refresh.scope
    endpoint = refresh.token_endpoint_auth
    if endpoint is not UNSET and endpoint is not None:
        if isinstance(endpoint.client_secret, str):
            secret["client_secret"] = endpoint.client_secret
        elif "client_secret" not in secret:
            raise InvalidRequest(
                "A client_secret is required when switching to secret authentication.",
                "auth.refresh.token_endpoint_auth.client_secret",
            )
        current["token_endpoint_auth"] = {"type": tag(endpoint)}
    public["refresh"] = current


def _url(value: str, param: str, *, https: bool = False) -> str:
    parts = urlsplit(value)
    loopback = parts.hostname in LOOPBACK
    schemes = ("https",) if https and not loopback else ("http", "https")
    if parts.scheme not in schemes or not parts.hostname:
        kind = "an HTTPS" if https else "an HTTP(S)"
        raise InvalidRequest(f"{param} must be {kind} URL.", param)
    return value


def _expiry(value: str | Any | None) -> str | None:
    if value is UNSET or value is None:
        return None
    try:
        datetime.fromisoformat(str(value))
    except ValueError as exc:
        raise InvalidRequest(
            "auth.expires_at must be an RFC 3339 timestamp.", "auth.expires_at"
        ) from exc
    return str(value)


def _secret_name(name: str) -> str:
    if not SECRET_NAME.match(name) or name.startswith("CODEX_") or name in RESERVED_NAMES:
        raise InvalidRequest(
            "auth.secret_name must be letters, digits and underscores, start with a letter"
            " or underscore, and not be reserved.",
            "auth.secret_name",
        )
    return name


def _secret_value(value: str, param: str) -> None:
    if any(ch in value for ch in "\r\n\x00"):
        raise InvalidRequest(
            "The secret must not contain carriage returns, newlines or NUL.", param
        )


def _networking(networking: m.CredentialNetworking) -> dict[str, Any]:
    if isinstance(networking, m.CredentialNetworkingUnrestricted):
        return {"type": "unrestricted"}
    hosts: list[str] = []
    for index, host in enumerate(networking.allowed_hosts):
        normal = host.strip().lower()
        param = f"auth.networking.allowed_hosts[{index}]"
        if not _host_ok(normal):
            raise InvalidRequest(
                "Allowed hosts are hostnames or IPv4 addresses without scheme, path, port"
                " or wildcard.",
                param,
            )
        if normal not in hosts:
            hosts.append(normal)
    if not 1 <= len(hosts) <= 16:
        raise InvalidRequest(
            "auth.networking.allowed_hosts needs 1 to 16 distinct hosts.",
            "auth.networking.allowed_hosts",
        )
    return {"type": "limited", "allowed_hosts": hosts}


def _host_ok(host: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(host), ipaddress.IPv4Address)
    except ValueError:
        return bool(HOST.match(host)) and len(host) <= 253

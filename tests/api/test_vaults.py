"""Vaults and write-only credentials through the official SDK."""

from __future__ import annotations

import secrets
from typing import Any

import openai
import pytest

from tests.api.support import Surface, http, surface
from tests.support import databases

__all__ = ["surface"]


def _secret(label: str) -> str:
    return f"{label}-{secrets.token_hex(12)}"


def test_vault_lifecycle_and_beta_header(surface: Surface) -> None:
    client = surface.new_client()
    vault = client.beta.agents.vaults.create(name="  team  ", metadata={"team": "a"})
    assert (vault.name, vault.metadata, vault.object) == ("team", {"team": "a"}, "vault")
    assert client.beta.agents.vaults.retrieve(vault.id) == vault
    kept = client.beta.agents.vaults.update(vault.id, metadata={"team": "b"})
    assert kept.name == "team" and kept.metadata == {"team": "b"}
    cleared = client.beta.agents.vaults.update(vault.id, name=None, metadata={})
    assert cleared.name is None and cleared.metadata == {}
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.vaults.update(vault.id, name="   ")
    deleted = client.beta.agents.vaults.delete(vault.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (vault.id, "vault.deleted", True)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.vaults.retrieve(vault.id)

    _, key = surface.project()
    for path in ("/v1/vaults", f"/v1/vaults/{vault.id}/credentials"):
        status, body, headers = http(
            surface.server.base_url, "GET", path, headers={"Authorization": f"Bearer {key}"}
        )
        assert status == 400 and body["error"]["code"] == "invalid_beta"
        assert headers["x-request-id"].startswith("req_")


def test_list_filters_by_metadata_and_status_and_pages(surface: Surface) -> None:
    client = surface.new_client()
    made = [
        client.beta.agents.vaults.create(name=f"v{i}", metadata={"env": "prod" if i % 2 else "dev"})
        for i in range(5)
    ]
    ids = [v.id for v in made]
    for limit in (1, 2):
        assert [v.id for v in client.beta.agents.vaults.list(limit=limit, order="asc")] == ids
        assert [v.id for v in client.beta.agents.vaults.list(limit=limit)] == ids[::-1]
    prod = [v.id for v in client.beta.agents.vaults.list(metadata={"env": "prod"}, order="asc")]
    assert prod == [ids[1], ids[3]]
    paged = client.beta.agents.vaults.list(metadata={"env": "dev"}, order="asc", limit=1)
    assert [v.id for v in paged] == [ids[0], ids[2], ids[4]]
    assert client.beta.agents.vaults.list(metadata={"env": "prod", "x": "y"}).data == []
    assert len(client.beta.agents.vaults.list(status="active").data) == 5
    assert len(client.beta.agents.vaults.list(status=["active", "archived"]).data) == 5
    assert client.beta.agents.vaults.list(status="archived").data == []
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.vaults.list(status="gone")  # type: ignore[arg-type]


AUTHS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {"type": "static_bearer", "token": "TOKEN", "mcp_server_url": "https://mcp.example/a"},
        {"type": "static_bearer", "mcp_server_url": "https://mcp.example/a"},
    ),
    (
        {
            "type": "mcp_oauth",
            "access_token": "TOKEN",
            "mcp_server_url": "https://mcp.example/b",
            "expires_at": "2030-01-01T00:00:00Z",
            "refresh": {
                "client_id": "client",
                "refresh_token": "TOKEN",
                "token_endpoint": "https://auth.example/token",
                "token_endpoint_auth": {"type": "client_secret_post", "client_secret": "TOKEN"},
                "scope": "read",
            },
        },
        {
            "type": "mcp_oauth",
            "mcp_server_url": "https://mcp.example/b",
            "expires_at": "2030-01-01T00:00:00Z",
            "refresh": {
                "client_id": "client",
                "token_endpoint": "https://auth.example/token",
                "token_endpoint_auth": {"type": "client_secret_post"},
                "resource": None,
                "scope": "read",
            },
        },
    ),
    (
        {
            "type": "environment_variable",
            "secret_name": "SERVICE_API_KEY",
            "secret_value": "TOKEN",
            "networking": {"type": "limited", "allowed_hosts": ["API.example.com", "10.0.0.1"]},
        },
        {
            "type": "environment_variable",
            "secret_name": "SERVICE_API_KEY",
            "networking": {"type": "limited", "allowed_hosts": ["api.example.com", "10.0.0.1"]},
        },
    ),
]


def _fill(value: Any, secret: str) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v, secret) for k, v in value.items()}
    return secret if value == "TOKEN" else value


@pytest.mark.parametrize(("auth", "public"), AUTHS, ids=[a["type"] for a, _ in AUTHS])
def test_credentials_return_only_their_public_description(
    surface: Surface, auth: dict[str, Any], public: dict[str, Any]
) -> None:
    client = surface.new_client()
    secret = _secret("create")
    vault = client.beta.agents.vaults.create(name="v")
    raw = client.beta.agents.vaults.credentials.with_raw_response.create(
        vault.id, name="cred", auth=_fill(auth, secret), metadata={"k": "v"}
    )
    body = raw.http_response.json()
    assert body["auth"] == public
    assert body["object"] == "vault.credential" and body["vault_id"] == vault.id
    assert body["metadata"] == {"k": "v"} and body["name"] == "cred"
    credential = raw.parse()
    fetched = client.beta.agents.vaults.credentials.retrieve(credential.id, vault_id=vault.id)
    assert fetched == credential
    listed = client.beta.agents.vaults.credentials.list(vault.id)
    assert [c.id for c in listed] == [credential.id]
    assert secret not in raw.http_response.text
    for record in surface.records:
        assert secret not in repr(record.body)


def test_rotation_replaces_secrets_and_keeps_the_method(surface: Surface) -> None:
    client = surface.new_client()
    vault = client.beta.agents.vaults.create()
    credential = client.beta.agents.vaults.credentials.create(
        vault.id,
        name="oauth",
        auth=_fill(AUTHS[1][0], _secret("first")),
    )
    rotated = client.beta.agents.vaults.credentials.update(
        credential.id,
        vault_id=vault.id,
        auth={
            "type": "mcp_oauth",
            "access_token": _secret("second"),
            "refresh": {"scope": None, "token_endpoint_auth": {"type": "client_secret_basic"}},
        },
        metadata={"rotated": "yes"},
    )
    assert rotated.metadata == {"rotated": "yes"}
    public = rotated.auth.model_dump()
    assert public["expires_at"] is None  # a new access token clears the old expiry
    assert public["refresh"]["scope"] is None
    assert public["refresh"]["token_endpoint_auth"] == {"type": "client_secret_basic"}
    assert rotated.updated_at >= credential.updated_at
    with pytest.raises(openai.BadRequestError):
        client.beta.agents.vaults.credentials.update(
            credential.id, vault_id=vault.id, auth={"type": "static_bearer", "token": "x"}
        )
    kept = client.beta.agents.vaults.credentials.update(credential.id, vault_id=vault.id)
    assert kept.metadata == {"rotated": "yes"}


@pytest.mark.parametrize(
    ("auth", "param"),
    [
        (
            {"type": "static_bearer", "token": "t", "mcp_server_url": "ftp://x"},
            "auth.mcp_server_url",
        ),
        ({"type": "static_bearer", "token": "", "mcp_server_url": "https://x"}, "auth.token"),
        (
            {
                "type": "environment_variable",
                "secret_name": "CODEX_TOKEN",
                "secret_value": "v",
                "networking": {"type": "unrestricted"},
            },
            "auth.secret_name",
        ),
        (
            {
                "type": "environment_variable",
                "secret_name": "OK",
                "secret_value": "a\nb",
                "networking": {"type": "unrestricted"},
            },
            "auth.secret_value",
        ),
        (
            {
                "type": "environment_variable",
                "secret_name": "OK",
                "secret_value": "v",
                "networking": {"type": "limited", "allowed_hosts": ["https://x.example/"]},
            },
            "auth.networking.allowed_hosts[0]",
        ),
        (
            {
                "type": "mcp_oauth",
                "access_token": "a",
                "mcp_server_url": "https://x",
                "expires_at": "tomorrow",
            },
            "auth.expires_at",
        ),
    ],
)
def test_invalid_credentials_name_the_field_and_never_echo_secrets(
    surface: Surface, auth: dict[str, Any], param: str
) -> None:
    client = surface.new_client()
    vault = client.beta.agents.vaults.create()
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.vaults.credentials.create(vault.id, name="bad", auth=auth)  # type: ignore[arg-type]
    assert caught.value.param == param
    assert client.beta.agents.vaults.credentials.list(vault.id).data == []


def test_deleting_a_vault_deletes_its_credentials(surface: Surface) -> None:
    client = surface.new_client()
    vault = client.beta.agents.vaults.create()
    credential = client.beta.agents.vaults.credentials.create(
        vault.id, name="c", auth=_fill(AUTHS[0][0], _secret("gone"))
    )
    gone = client.beta.agents.vaults.credentials.delete(credential.id, vault_id=vault.id)
    assert (gone.object, gone.deleted) == ("vault.credential.deleted", True)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.vaults.credentials.retrieve(credential.id, vault_id=vault.id)
    other = client.beta.agents.vaults.credentials.create(
        vault.id, name="c2", auth=_fill(AUTHS[0][0], _secret("gone"))
    )
    client.beta.agents.vaults.delete(vault.id)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.vaults.credentials.retrieve(other.id, vault_id=vault.id)
    with pytest.raises(openai.NotFoundError):
        client.beta.agents.vaults.credentials.list(vault.id)


def test_credentials_page_in_both_orders(surface: Surface) -> None:
    client = surface.new_client()
    vault = client.beta.agents.vaults.create()
    made = [
        client.beta.agents.vaults.credentials.create(
            vault.id,
            name=f"c{i}",
            auth=_fill(AUTHS[0][0], _secret("page")),
            metadata={"n": str(i % 2)},
        ).id
        for i in range(5)
    ]
    for limit in (1, 2):
        listed = client.beta.agents.vaults.credentials.list(vault.id, limit=limit, order="asc")
        assert [c.id for c in listed] == made
        listed = client.beta.agents.vaults.credentials.list(vault.id, limit=limit)
        assert [c.id for c in listed] == made[::-1]
    odd = client.beta.agents.vaults.credentials.list(vault.id, metadata={"n": "1"}, order="asc")
    assert [c.id for c in odd] == [made[1], made[3]]


def test_secrets_never_reach_responses_logs_or_database_text(surface: Surface) -> None:
    client = surface.new_client()
    vault = client.beta.agents.vaults.create()
    planted = []
    for auth, _ in AUTHS:
        secret = _secret("planted")
        planted.append(secret)
        credential = client.beta.agents.vaults.credentials.create(
            vault.id, name="c", auth=_fill(auth, secret)
        )
        rotated = _secret("rotated")
        planted.append(rotated)
        rotation: dict[str, Any] = {
            "static_bearer": {"type": "static_bearer", "token": rotated},
            "mcp_oauth": {"type": "mcp_oauth", "access_token": rotated},
            "environment_variable": {"type": "environment_variable", "secret_value": rotated},
        }[auth["type"]]
        client.beta.agents.vaults.credentials.update(
            credential.id, vault_id=vault.id, auth=rotation
        )
        client.beta.agents.vaults.credentials.list(vault.id)
    data_dir = surface.server.data_dir
    stored = databases.stored_bytes(data_dir)
    log = surface.server.log.read_bytes()
    for secret in planted:
        assert secret.encode() not in stored
        assert secret.encode() not in log
        for record in surface.records:
            assert secret not in repr(record.body)

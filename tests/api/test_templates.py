"""Environment templates through the official SDK."""

from __future__ import annotations

import base64
import secrets

import openai
import pytest

from tests.api.support import Surface, surface
from tests.support import databases

__all__ = ["surface"]

PLUGIN_ZIP = base64.b64encode(b"PK\x05\x06" + b"\x00" * 18).decode()


def test_template_shape_defaults_and_confidential_inputs(surface: Surface) -> None:
    client = surface.new_client()
    hidden = f"hidden-{secrets.token_hex(8)}"
    raw = client.beta.agents.environments.templates.with_raw_response.create(
        name="web",
        capability_directories=["/opt/skills"],
        desktop={"enabled": True},
        env={"API_TOKEN": hidden},
        files=[
            {"type": "inline", "data": base64.b64encode(b"hello").decode(), "path": "/workspace/a"},
            {"type": "file_id", "file_id": "file_1", "path": "/workspace/b/c.txt"},
        ],
        network={"access": "restricted", "allowed_domains": ["pypi.org"]},
        packages={"python": ["httpx"]},
        plugins=[
            {
                "type": "inline",
                "name": "p",
                "description": "d",
                "source": {"type": "base64", "media_type": "application/zip", "data": PLUGIN_ZIP},
            }
        ],
        setup_commands=[{"command": f"echo {hidden}"}],
        skills=[{"type": "skill_reference", "skill_id": "skill_1"}],
    )
    body = raw.http_response.json()
    assert hidden not in raw.http_response.text
    assert body["object"] == "agent.environment.template" and body["name"] == "web"
    assert body["files"] == [
        {"type": "inline", "path": "/workspace/a", "size_bytes": 5},
        {"type": "file_id", "file_id": "file_1", "path": "/workspace/b/c.txt"},
    ]
    assert body["network"] == {"access": "restricted", "allowed_domains": ["pypi.org"]}
    assert body["packages"] == {"npm": [], "python": ["httpx"], "system": []}
    assert body["plugins"] == [{"type": "inline", "name": "p", "description": "d"}]
    assert body["skills"] == [{"type": "skill_reference", "skill_id": "skill_1", "version": None}]
    assert body["desktop"] == {"enabled": True}
    assert "env" not in body and "setup_commands" not in body

    template = raw.parse()
    kept = client.beta.agents.environments.templates.update(template.id, name="renamed")
    assert kept.name == "renamed" and kept.files == template.files
    reset = client.beta.agents.environments.templates.update(
        template.id, network=None, desktop=None, files=None
    )
    assert reset.network.access == "disabled" and reset.network.allowed_domains == []
    assert reset.desktop is None and reset.files == []
    assert reset.packages.python == ["httpx"]
    stored = databases.stored_bytes(surface.server.data_dir)
    assert hidden.encode() not in stored

    bare = client.beta.agents.environments.templates.create()
    assert bare.name is None and bare.files == [] and bare.plugins == [] and bare.skills == []
    assert bare.capability_directories == [] and bare.desktop is None


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"files": [{"type": "inline", "data": "aGk=", "path": "/etc/passwd"}]}, "files[0].path"),
        (
            {"files": [{"type": "inline", "data": "aGk=", "path": "/workspace/../x"}]},
            "files[0].path",
        ),
        ({"files": [{"type": "inline", "data": "***", "path": "/workspace/x"}]}, "files[0].data"),
        (
            {"files": [{"type": "inline", "data": "aGk=", "path": "/workspace/" + "b" * 256}]},
            "files[0].path",
        ),
        ({"network": {"access": "enabled", "allowed_domains": ["a.com"]}}, "network.access"),
        (
            {
                "network": {
                    "access": "restricted",
                    "allowed_domains": ["a"],
                    "blocked_domains": ["b"],
                }
            },
            "network.blocked_domains",
        ),
        ({"colour": "red"}, None),
    ],
)
def test_invalid_templates_are_rejected(
    surface: Surface, fields: dict[str, object], param: str | None
) -> None:
    client = surface.new_client()
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.environments.templates.create(extra_body=fields)
    if param is not None:
        assert caught.value.param == param
    assert client.beta.agents.environments.templates.list().data == []


def test_templates_page_and_delete(surface: Surface) -> None:
    client = surface.new_client()
    templates = client.beta.agents.environments.templates
    made = [templates.create(name=f"t{i}").id for i in range(5)]
    for limit in (1, 2):
        assert [t.id for t in templates.list(limit=limit, order="asc")] == made
        assert [t.id for t in templates.list(limit=limit, order="desc")] == made[::-1]
    deleted = templates.delete(made[0])
    assert (deleted.id, deleted.object, deleted.deleted) == (
        made[0],
        "agent.environment.template.deleted",
        True,
    )
    with pytest.raises(openai.NotFoundError):
        templates.retrieve(made[0])
    with pytest.raises(openai.NotFoundError):
        templates.update(made[0], name="x")
    assert [t.id for t in templates.list(order="asc")] == made[1:]

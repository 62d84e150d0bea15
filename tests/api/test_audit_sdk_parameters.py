"""Parameters of the official SDK that corebox must honour or refuse, found by walking
the SDK's methods: each accepted value shows up as the SDK's types say, each refused one
names its parameter and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai import OpenAI

from tests.api.support import Surface, http, unchanged
from tests.api.test_turns import WEATHER_TOOL, idle_session
from tests.conftest import API_KEY

NONE_ENV: Any = {"type": "none"}


def _settled(client: OpenAI, environment_id: str) -> None:
    """Wait (by reading its state) until a new hosted environment has finished
    initializing, so its background writes do not land in a later test's `unchanged`."""
    for _ in range(5000):
        if client.beta.agents.environments.retrieve(environment_id).status != "pending":
            return
    raise AssertionError("the environment stayed pending")


def _idle(client: OpenAI, **fields: Any) -> Any:
    """A session created with a first turn, once that turn has settled (the create
    stream ends after the session goes idle): its `agent.session.created` view."""
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment=NONE_ENV, input="hi", stream=True, **fields
        )
    )
    assert events[-1].type == "agent.session.idle"
    return events[0].session


def test_a_spend_control_without_a_limit_means_no_limit(client: OpenAI) -> None:
    """The SDK's `SpendControl.limit` is a positive integer; `{"limit": null}` asks for
    none, so the session shows none (strict validation would reject a null limit)."""
    sessions = client.beta.agents.sessions
    unlimited = _idle(client, spend_control={"limit": None})
    assert unlimited.spend_control is None
    assert sessions.retrieve(unlimited.id).spend_control is None
    assert all(s.spend_control is None for s in sessions.list().data if s.id == unlimited.id)

    limited = _idle(client, spend_control={"limit": 50})
    assert limited.spend_control is not None and limited.spend_control.limit == 50
    cleared = sessions.update(limited.id, spend_control={"limit": None})
    assert cleared.spend_control is None
    assert sessions.retrieve(limited.id).spend_control is None
    again = sessions.update(limited.id, spend_control={"limit": 70})
    assert again.spend_control is not None and again.spend_control.limit == 70
    assert sessions.update(limited.id, spend_control=None).spend_control is None


def test_the_environment_list_type_filter_is_checked(
    surface: Surface, client: OpenAI, tmp_path: Path
) -> None:
    environments = client.beta.agents.environments
    hosted = environments.create(environment={"type": "openai_hosted"})
    _settled(client, hosted.id)
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "self_hosted", "workspace_directory": str(tmp_path)},
            input="hi",
            stream=True,
        )
    )
    assert events[-1].type == "agent.session.idle"
    newest = environments.list(type="openai_hosted").data
    assert newest[0].id == hosted.id and {e.type for e in newest} == {"openai_hosted"}
    local = environments.list(extra_query={"type": "self_hosted"}).data
    assert local and {e.type for e in local} == {"self_hosted"}
    assert hosted.id not in {e.id for e in local}
    with pytest.raises(openai.BadRequestError) as raised:
        environments.list(extra_query={"type": "zzz"})
    assert raised.value.param == "type"
    status, body, _ = http(
        surface.server.base_url,
        "GET",
        "/v1/agents/environments?type=openai_hosted&type=openai_hosted",
        headers={"Authorization": f"Bearer {API_KEY}", "OpenAI-Beta": "agents=v1"},
    )
    assert status == 400 and body["error"]["param"] == "type"


def test_a_file_expiry_is_kept_and_a_bad_one_refused(surface: Surface, client: OpenAI) -> None:
    """`expires_after` gives the file an `expires_at` of its `created_at` plus the
    seconds (shown by every read); a policy out of bounds, with another anchor or half
    given is refused naming the field, and writes nothing."""
    for policy, param in (
        ({"anchor": "created_at", "seconds": 3599}, "expires_after.seconds"),
        ({"anchor": "created_at", "seconds": 2_592_001}, "expires_after.seconds"),
        ({"anchor": "last_active_at", "seconds": 3600}, "expires_after.anchor"),
        ({"seconds": 3600}, "expires_after.anchor"),
        ({"anchor": "created_at"}, "expires_after.seconds"),
    ):
        with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as raised:
            client.files.create(file=("a.txt", b"hi"), purpose="user_data", expires_after=policy)  # type: ignore[arg-type]
        assert raised.value.param == param
    made = client.files.create(
        file=("a.txt", b"hi"),
        purpose="user_data",
        expires_after={"anchor": "created_at", "seconds": 3600},
    )
    assert made.expires_at == made.created_at + 3600
    assert client.files.retrieve(made.id).expires_at == made.expires_at
    listed = {f.id: f.expires_at for f in client.files.list()}
    assert listed[made.id] == made.expires_at
    kept = client.files.create(file=("a.txt", b"hi"), purpose="user_data")
    assert kept.expires_at is None


def test_an_unknown_upload_field_is_refused(surface: Surface, client: OpenAI) -> None:
    with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as raised:
        client.files.create(
            file=("a.txt", b"hi"), purpose="user_data", extra_body={"chunking": "auto"}
        )
    assert raised.value.param == "chunking"


def test_an_empty_metadata_key_is_refused_everywhere(surface: Surface, client: OpenAI) -> None:
    """A key no `metadata[k]=v` filter can name is refused where metadata is written."""
    agents = client.beta.agents
    session_id = idle_session(client)
    vault = agents.vaults.create(name="v")
    empty = {"": "v"}
    for name, write in {
        "agents.create": lambda: agents.create(model="scripted", metadata=empty),
        "sessions.create": lambda: agents.sessions.create(
            agent={"model": "scripted"}, environment=NONE_ENV, input="hi", metadata=empty
        ),
        "sessions.update": lambda: agents.sessions.update(session_id, metadata=empty),
        "vaults.create": lambda: agents.vaults.create(name="w", metadata=empty),
        "vaults.update": lambda: agents.vaults.update(vault.id, metadata=empty),
    }.items():
        with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as raised:
            write()
        assert raised.value.param == "metadata.", name
    assert agents.create(model="scripted", metadata={"k" * 64: "v"}).metadata == {"k" * 64: "v"}


def test_vaults_given_to_an_environment_are_refused_not_dropped(
    surface: Surface, client: OpenAI
) -> None:
    """An environment keeps no credentials of its own (a session's come from its own
    `vault_ids`), so `environments.create(vault_ids=[...])` is refused, known vault or
    not; an empty list asks for nothing and is accepted."""
    environments = client.beta.agents.environments
    vault = client.beta.agents.vaults.create(name="v")
    for vault_ids in ([vault.id], ["vault_unknown"]):
        with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as raised:
            environments.create(environment={"type": "openai_hosted"}, vault_ids=vault_ids)
        assert raised.value.param == "vault_ids"
        assert raised.value.code == "unsupported_or_invalid_configuration"
    accepted = environments.create(environment={"type": "openai_hosted"}, vault_ids=[])
    _settled(client, accepted.id)


def test_what_no_harness_can_use_is_refused_where_it_is_given(
    surface: Surface, client: OpenAI
) -> None:
    """A desktop, network restrictions, system packages and plugins are refused by
    sessions, standalone environments and automation targets alike, at creation."""
    agents = client.beta.agents
    hosted: Any = {"type": "openai_hosted"}
    for field, value, param in (
        ("desktop", {"enabled": True}, "desktop.enabled"),
        ("network", {"access": "disabled"}, "network.access"),
        ("packages", {"system": ["curl"]}, "packages.system"),
    ):
        environment = {**hosted, field: value}
        target: Any = {
            "type": "new_session",
            "agent": {"model": "scripted"},
            "environment": environment,
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        }
        creations: list[tuple[str, Callable[[], Any]]] = [
            ("environment", partial(agents.environments.create, environment=environment)),
            (
                "environment",
                partial(
                    agents.sessions.create,
                    agent={"model": "scripted"},
                    environment=environment,
                    input="hi",
                ),
            ),
            (
                "target.environment",
                partial(
                    agents.automations.create,
                    type="once",
                    name="x",
                    run_at=4_000_000_000,
                    target=target,
                ),
            ),
        ]
        for where, create in creations:
            with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as bad:
                create()
            assert bad.value.code == "unsupported_or_invalid_configuration", (field, where)
            assert bad.value.param == f"{where}.{param}", (field, where)
    plain = agents.environments.create(environment={**hosted, "desktop": {"enabled": False}})
    _settled(client, plain.id)


EMPTY_TEXT: Any = [{"role": "user", "content": [{"type": "input_text", "text": ""}]}]


def test_a_message_of_empty_text_is_refused_wherever_input_is_given(
    surface: Surface, client: OpenAI
) -> None:
    """An empty string is refused as `input`; a message whose only text is empty says
    no more, so it is refused too, naming where it was given."""
    agents = client.beta.agents
    session_id = idle_session(client)
    for param, create in (
        (
            "input[0].content",
            partial(
                agents.sessions.create,
                agent={"model": "scripted"},
                environment=NONE_ENV,
                input=EMPTY_TEXT,
            ),
        ),
        (
            "events[1].input[0].content",
            partial(
                agents.sessions.events.create,
                session_id,
                events=[
                    {"type": "agent.session.input.cancel"},
                    {"type": "agent.session.input.message", "input": EMPTY_TEXT},
                ],
            ),
        ),
        (
            "events[0].input",
            partial(
                agents.sessions.events.create,
                session_id,
                events=[{"type": "agent.session.input.message", "input": []}],
            ),
        ),
        (
            "target.input[0].content",
            partial(
                agents.automations.create,
                type="once",
                name="x",
                run_at=4_000_000_000,
                target={
                    "type": "new_session",
                    "agent": {"model": "scripted"},
                    "environment": NONE_ENV,
                    "input": EMPTY_TEXT,
                },
            ),
        ),
    ):
        with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as raised:
            create()
        assert raised.value.param == param
    image: Any = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": ""},
                {"type": "input_image", "image_url": "https://example.com/a.png"},
            ],
        }
    ]
    events = list(
        agents.sessions.create(
            agent={"model": "scripted"}, environment=NONE_ENV, input=image, stream=True
        )
    )
    assert events[-1].type == "agent.session.idle"


BETA = {"Authorization": f"Bearer {API_KEY}", "OpenAI-Beta": "agents=v1"}


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b'{"model": "scripted", "model": "other"}', "model"),
        (b'{"model": "scripted", "metadata": {"k": "a", "k": "b"}}', "k"),
    ],
)
def test_a_body_that_repeats_a_key_is_refused(surface: Surface, body: bytes, param: str) -> None:
    """Parsers disagree on which copy of a repeated key wins, so such a body has no
    single meaning: it is refused naming the key, and nothing is created."""
    with httpx2.Client(timeout=30) as http_client, unchanged(surface.server.data_dir):
        answer = http_client.post(
            f"{surface.server.base_url}/v1/agents",
            headers={**BETA, "Content-Type": "application/json"},
            content=body,
        )
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == param


def test_the_files_api_refuses_a_repeated_field_and_a_delete_body(
    surface: Surface, client: OpenAI
) -> None:
    auth = {"Authorization": f"Bearer {API_KEY}"}
    base = surface.server.base_url
    with httpx2.Client(timeout=30) as http_client:
        with unchanged(surface.server.data_dir):
            twice = http_client.post(
                f"{base}/v1/files",
                headers=auth,
                files=[("file", ("a.txt", b"x"))],
                data={"purpose": ["user_data", "user_data"]},
            )
        assert twice.status_code == 400
        assert twice.json()["error"]["code"] == "unsupported_parameter"
        assert twice.json()["error"]["param"] == "purpose"
        kept = client.files.create(file=("a.txt", b"x"), purpose="user_data")
        with unchanged(surface.server.data_dir):
            bodied = http_client.request(
                "DELETE",
                f"{base}/v1/files/{kept.id}",
                headers={**auth, "Content-Type": "application/json"},
                content=b'{"force": true}',
            )
        assert bodied.status_code == 400
        assert bodied.json()["error"]["code"] == "unsupported_parameter"
    assert client.files.delete(kept.id).deleted is True


def test_an_unknown_field_is_named_in_param(surface: Surface, client: OpenAI) -> None:
    agents = client.beta.agents
    session_id = idle_session(client)
    for param, send in (
        ("bogus", partial(agents.create, model="scripted", extra_body={"bogus": 1})),
        (
            "agent.instructions",
            partial(agents.sessions.update, session_id, agent={"instructions": "x"}),  # type: ignore[typeddict-unknown-key]
        ),
        (
            "tools[0].strict",
            partial(
                agents.create,
                model="scripted",
                tools=[{**WEATHER_TOOL, "strict": True}],  # type: ignore[list-item]
            ),
        ),
    ):
        with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as raised:
            send()
        assert raised.value.param == param

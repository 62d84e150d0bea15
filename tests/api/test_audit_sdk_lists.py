"""Every cursor list of the official SDK (`client.beta.agents`, `client.files`,
`client.skills`), table-driven: `limit` outside its bounds, an unknown `order` and a
repeated cursor parameter are refused naming the parameter and change nothing; pages of
one walk the whole list in both orders with `has_more`, `first_id` and `last_id` as the
SDK reads them; every retrieve of an unknown id is a 404 `not_found_error`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.api.support import Surface, unchanged
from tests.api.test_automations import NEW_SESSION
from tests.api.test_skills import skill_zip
from tests.api.test_turns import idle_session, message

NONE_ENV: Any = {"type": "none"}
Lister = Callable[..., Any]


def _seed(client: OpenAI) -> dict[str, Lister]:
    """A session with a settled turn, a vault, an agent and an automation to list
    under; every cursor list of the SDK keyed by its name."""
    agents = client.beta.agents
    sid = idle_session(client)
    turn_id = agents.sessions.turns.list(sid).data[0].id
    vault = agents.vaults.create(name="v")
    automation = agents.automations.create(
        type="periodic",
        name="nightly",
        expression="0 3 * * *",
        timezone="UTC",
        target=NEW_SESSION,  # type: ignore[arg-type]
    )
    skill = client.skills.create(files=("s.zip", skill_zip("lister"), "application/zip"))
    return {
        "agents": agents.list,
        "sessions": agents.sessions.list,
        "session items": lambda **k: agents.sessions.items.list(sid, **k),
        "turns": lambda **k: agents.sessions.turns.list(sid, **k),
        "turn items": lambda **k: agents.sessions.turns.items.list(turn_id, session_id=sid, **k),
        "subagents": lambda **k: agents.sessions.subagents.list(sid, **k),
        "artifacts": lambda **k: agents.sessions.artifacts.list(sid, **k),
        "traces": lambda **k: agents.sessions.traces.list(sid, **k),
        "environments": agents.environments.list,
        "templates": agents.environments.templates.list,
        "automations": agents.automations.list,
        "invocations": lambda **k: agents.automations.invocations.list(automation.id, **k),
        "vaults": agents.vaults.list,
        "credentials": lambda **k: agents.vaults.credentials.list(vault.id, **k),
        "files": client.files.list,
        "skills": client.skills.list,
        "skill versions": lambda **k: client.skills.versions.list(skill.id, **k),
    }


# The Files API's own bound: 1-10,000.
MAXIMUM = {"files": 10_000}


def test_every_list_refuses_a_limit_outside_its_bounds(surface: Surface, client: OpenAI) -> None:
    listers = _seed(client)
    for name, lister in listers.items():
        top = MAXIMUM.get(name, 100)
        lister(limit=1)
        lister(limit=top)
        for limit in (0, -1, top + 1):
            with unchanged(surface.server.data_dir), pytest.raises(openai.BadRequestError) as bad:
                lister(limit=limit)
            assert (bad.value.param, bad.value.type) == ("limit", "invalid_request_error"), name
        for query, param in (
            ({"limit": "ten"}, "limit"),
            ({"limit": "1_0"}, "limit"),
            ({"limit": "+5"}, "limit"),
            ({"limit": ""}, "limit"),
            ({"limit": "9" * 5000}, "limit"),  # past what `int` reads from text
            ({"order": "sideways"}, "order"),
            ({"order": ""}, "order"),
        ):
            with pytest.raises(openai.BadRequestError) as bad:
                lister(extra_query=query)
            assert bad.value.param == param, (name, query)


def _walk(lister: Lister, order: str) -> list[str]:
    """Every id of a list in pages of one, checking the envelope of each page."""
    seen: list[str] = []
    after: dict[str, Any] = {}
    while True:
        page = lister(limit=1, order=order, **after)
        assert len(page.data) <= 1
        if not page.data:
            assert page.has_more is False
            return seen
        assert page.first_id == page.last_id == page.data[0].id
        seen.append(page.data[0].id)
        if not page.has_more:
            return seen
        after = {"after": page.data[0].id}


def test_pages_of_one_walk_each_list_in_both_orders(surface: Surface) -> None:
    client = surface.new_client("paging")
    agents = client.beta.agents
    for n in range(3):
        agents.create(model="scripted", name=f"a{n}")
        agents.vaults.create(name=f"v{n}")
        agents.environments.templates.create(name=f"t{n}")
        client.files.create(file=(f"f{n}.txt", b"x"), purpose="user_data")
        client.skills.create(files=("s.zip", skill_zip(f"walk-{n}"), "application/zip"))
    for name, lister in {
        "agents": agents.list,
        "vaults": agents.vaults.list,
        "templates": agents.environments.templates.list,
        "files": client.files.list,
        "skills": client.skills.list,
    }.items():
        newest_first = _walk(lister, "desc")
        assert len(newest_first) == 3, name
        assert _walk(lister, "asc") == list(reversed(newest_first)), name
        assert [item.id for item in lister().data] == newest_first, name
        padded = lister(after=f" {newest_first[0]} ").data
        assert [item.id for item in padded] == newest_first[1:], name


def _retrievers(client: OpenAI, session_id: str, vault_id: str) -> dict[str, Callable[[], Any]]:
    agents = client.beta.agents
    sessions = agents.sessions
    return {
        "agent": lambda: agents.retrieve("agent_unknown"),
        "agent delete": lambda: agents.delete("agent_unknown"),
        "session": lambda: sessions.retrieve("sess_unknown"),
        "session delete": lambda: sessions.delete("sess_unknown"),
        "turn": lambda: sessions.turns.retrieve("turn_unknown", session_id=session_id),
        "subagent": lambda: sessions.subagents.retrieve("sub_unknown", session_id=session_id),
        "artifact": lambda: sessions.artifacts.retrieve("art_unknown", session_id=session_id),
        "artifact content": lambda: sessions.artifacts.content(
            "art_unknown", session_id=session_id
        ),
        "artifact delete": lambda: sessions.artifacts.delete("art_unknown", session_id=session_id),
        "events of an unknown session": lambda: sessions.events.create(
            "sess_unknown",
            events=[message("hi")],  # type: ignore[list-item]
        ),
        "environment": lambda: agents.environments.retrieve("env_unknown"),
        "environment files": lambda: agents.environments.files.list("env_unknown"),
        "template": lambda: agents.environments.templates.retrieve("envtpl_unknown"),
        "template delete": lambda: agents.environments.templates.delete("envtpl_unknown"),
        "automation": lambda: agents.automations.retrieve("auto_unknown"),
        "automation pause": lambda: agents.automations.pause("auto_unknown"),
        "automation resume": lambda: agents.automations.resume("auto_unknown"),
        "automation delete": lambda: agents.automations.delete("auto_unknown"),
        "invocation": lambda: agents.automations.invocations.retrieve(
            "inv_unknown", automation_id="auto_unknown"
        ),
        "vault": lambda: agents.vaults.retrieve("vault_unknown"),
        "vault delete": lambda: agents.vaults.delete("vault_unknown"),
        "credential": lambda: agents.vaults.credentials.retrieve("cred_unknown", vault_id=vault_id),
        "credential delete": lambda: agents.vaults.credentials.delete(
            "cred_unknown", vault_id=vault_id
        ),
        "file": lambda: client.files.retrieve("file_unknown"),
        "file content": lambda: client.files.content("file_unknown"),
        "file delete": lambda: client.files.delete("file_unknown"),
        "skill": lambda: client.skills.retrieve("skill_unknown"),
        "skill content": lambda: client.skills.content.retrieve("skill_unknown"),
        "skill delete": lambda: client.skills.delete("skill_unknown"),
        "skill version": lambda: client.skills.versions.retrieve("7", skill_id="skill_unknown"),
    }


def test_every_unknown_id_is_a_404_not_found_error(surface: Surface, client: OpenAI) -> None:
    session_id = idle_session(client)
    vault = client.beta.agents.vaults.create(name="v")
    for name, call in _retrievers(client, session_id, vault.id).items():
        with unchanged(surface.server.data_dir), pytest.raises(openai.NotFoundError) as missing:
            call()
        assert missing.value.type == "not_found_error", name
        assert missing.value.status_code == 404, name

"""Fork and rewind through the real server: `POST /x/v1/sessions/{id}/fork` and
`/rewind`, driven with the official SDK's `client.post`, builtin turns against the
loopback model server that records every request, and managed workspaces on disk."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai import OpenAI
from openai.lib.beta.agents._result import AgentTurnResultError

from allinone.core.gateway.workspace import wire_uuid
from runtime.proto import limits
from tests.api.support import Surface
from tests.support.model_server import MODEL, ModelServer, Reply

KEY = "sk-model-secret-0123456789"


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


def x_post(client: OpenAI, surface: Surface, path: str, body: dict[str, Any]) -> Any:
    return client.post(f"{surface.server.base_url}{path}", cast_to=object, body=body)


def builtin_session(client: OpenAI, model: ModelServer, *texts: str) -> str:
    """A builtin session with one turn per text, each answered by the model."""
    model.queue(*(Reply.say(f"reply {n}") for n in range(1, len(texts) + 1)))
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": MODEL},
            environment={"type": "none"},
            input=texts[0],
            stream=True,
            extra_body={
                "x_corebox": {
                    "model_provider": {
                        "protocol": "chat_completions",
                        "base_url": model.base_url,
                        "api_key": KEY,
                    }
                }
            },
        )
    )
    session_id = str(events[0].session.id)
    for text in texts[1:]:
        run(client, session_id, text)
    return session_id


def run(client: OpenAI, session_id: str, text: str) -> Any:
    with client.beta.agents.sessions.stream(session_id, input=text) as stream:
        result = stream.get_final_result()
    assert result.turn.status == "completed"
    return result


def conversation(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], str(m["content"])) for m in request["messages"] if m["role"] != "system"]


def turn_ids(client: OpenAI, session_id: str) -> list[str]:
    return [t.id for t in client.beta.agents.sessions.turns.list(session_id, order="asc").data]


def texts(client: OpenAI, session_id: str) -> list[tuple[str, str]]:
    items = client.beta.agents.sessions.items.list(session_id, order="asc").data
    return [(i.role, i.content[0].text) for i in items]  # type: ignore[union-attr]


def test_a_fork_at_turn_two_carries_only_turns_one_and_two(
    client: OpenAI, surface: Surface, model: ModelServer
) -> None:
    parent = builtin_session(client, model, "one", "two", "three")
    second = turn_ids(client, parent)[1]
    fork = x_post(client, surface, f"/x/v1/sessions/{parent}/fork", {"turn_id": second})
    assert fork["object"] == "agent.session" and fork["id"] != parent
    assert fork["x_corebox"]["forked_from"] == {"session_id": parent, "turn_id": second}
    assert fork["agent"] == client.beta.agents.sessions.retrieve(parent).agent.to_dict()
    assert texts(client, fork["id"]) == [
        ("user", "one"),
        ("assistant", "reply 1"),
        ("user", "two"),
        ("assistant", "reply 2"),
    ]
    copied = {i.id for i in client.beta.agents.sessions.items.list(fork["id"]).data}
    original = {i.id for i in client.beta.agents.sessions.items.list(parent).data}
    assert not copied & original  # new ids
    model.queue(Reply.say("forked"))
    run(client, fork["id"], "four")
    assert conversation(model.requests[-1].body) == [
        ("user", "one"),
        ("assistant", "reply 1"),
        ("user", "two"),
        ("assistant", "reply 2"),
        ("user", "four"),
    ]
    # The parent is unchanged.
    assert len(texts(client, parent)) == 6
    assert client.beta.agents.sessions.retrieve(parent).x_corebox["forked_from"] is None  # type: ignore[attr-defined]


def test_a_fork_at_an_item_and_by_default(
    client: OpenAI, surface: Surface, model: ModelServer
) -> None:
    parent = builtin_session(client, model, "one", "two")
    first_user = client.beta.agents.sessions.items.list(parent, order="asc").data[0]
    at_item = x_post(client, surface, f"/x/v1/sessions/{parent}/fork", {"item_id": first_user.id})
    assert texts(client, at_item["id"]) == [("user", "one")]
    latest = x_post(client, surface, f"/x/v1/sessions/{parent}/fork", {})
    assert latest["x_corebox"]["forked_from"]["turn_id"] == turn_ids(client, parent)[-1]
    assert len(texts(client, latest["id"])) == 4


def test_a_fork_names_what_it_cannot_copy(client: OpenAI, surface: Surface) -> None:
    with pytest.raises(openai.NotFoundError):
        x_post(client, surface, "/x/v1/sessions/sess_missing/fork", {})
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="hi", stream=True
        )
    )
    session_id = str(events[0].session.id)
    with pytest.raises(openai.NotFoundError):
        x_post(client, surface, f"/x/v1/sessions/{session_id}/fork", {"turn_id": "turn_nope"})
    with pytest.raises(openai.BadRequestError):
        x_post(client, surface, f"/x/v1/sessions/{session_id}/fork", {"turns": 1})


def workspace(surface: Surface, environment_id: str) -> Any:
    return surface.server.data_dir / "workspaces" / wire_uuid(environment_id)


def scripted_hosted(client: OpenAI, text: str) -> Any:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"},
            environment={"type": "openai_hosted"},
            input=text,
            stream=True,
        )
    )
    return client.beta.agents.sessions.retrieve(str(events[0].session.id))


def scripted_turn(client: OpenAI, session_id: str, text: str) -> None:
    with client.beta.agents.sessions.stream(session_id, input=text) as stream:
        assert stream.get_final_result().turn.status == "completed"


def test_a_forked_managed_workspace_is_a_copy_as_the_turn_left_it(
    client: OpenAI, surface: Surface
) -> None:
    parent = scripted_hosted(client, "/write a.txt first")
    first = turn_ids(client, parent.id)[0]
    scripted_turn(client, parent.id, "/write later.txt after the fork point")
    fork = x_post(client, surface, f"/x/v1/sessions/{parent.id}/fork", {"turn_id": first})
    assert fork["environment"]["type"] == "openai_hosted"
    assert fork["environment"]["id"] != parent.environment.id  # type: ignore[union-attr]
    scripted_turn(client, fork["id"], "/write b.txt only in the fork")
    original = workspace(surface, parent.environment.id)  # type: ignore[union-attr]
    copy = workspace(surface, fork["environment"]["id"])
    assert (copy / "a.txt").read_text() == "first"
    assert (copy / "b.txt").exists()
    assert not (copy / "later.txt").exists()  # written after the fork point
    assert not (original / "b.txt").exists()
    assert (original / "later.txt").exists()


def test_a_fork_without_a_kept_snapshot_is_refused(client: OpenAI, surface: Surface) -> None:
    parent = scripted_hosted(client, "/write n.txt 0")
    for n in range(limits.MAX_WORKSPACE_SNAPSHOTS):
        scripted_turn(client, parent.id, f"/write n.txt {n + 1}")
    first = turn_ids(client, parent.id)[0]
    with pytest.raises(openai.ConflictError) as refused:
        x_post(client, surface, f"/x/v1/sessions/{parent.id}/fork", {"turn_id": first})
    assert "No workspace snapshot exists" in str(refused.value)
    kept = surface.server.data_dir / "snapshots" / wire_uuid(parent.environment.id)  # type: ignore[union-attr]
    assert len(list(kept.iterdir())) == limits.MAX_WORKSPACE_SNAPSHOTS
    second = turn_ids(client, parent.id)[1]
    fork = x_post(client, surface, f"/x/v1/sessions/{parent.id}/fork", {"turn_id": second})
    scripted_turn(client, fork["id"], "/say hello")
    assert (workspace(surface, fork["environment"]["id"]) / "n.txt").read_text() == "1"


def test_a_rewind_hides_turns_from_the_model_and_keeps_history(
    client: OpenAI, surface: Surface, model: ModelServer
) -> None:
    session_id = builtin_session(client, model, "one", "two", "three")
    ids = turn_ids(client, session_id)
    marker = x_post(client, surface, f"/x/v1/sessions/{session_id}/rewind", {"turns": 2})
    assert marker["object"] == "x_corebox.rewind"
    assert marker["session_id"] == session_id and marker["turns"] == 2
    assert marker["hidden_turn_ids"] == ids[1:]
    session = client.beta.agents.sessions.retrieve(session_id)
    assert session.x_corebox["hidden_turn_ids"] == ids[1:]  # type: ignore[attr-defined]
    assert len(texts(client, session_id)) == 6  # nothing deleted
    model.queue(Reply.say("again"))
    result = run(client, session_id, "four")
    assert conversation(model.requests[-1].body) == [
        ("user", "one"),
        ("assistant", "reply 1"),
        ("user", "four"),
    ]
    turn = client.beta.agents.sessions.turns.retrieve(result.turn.id, session_id=session_id)
    assert turn.x_corebox["context"] == {  # type: ignore[attr-defined]
        "rebuilt": True,
        "items_included": 2,
        "items_omitted": 4,
        "turns_hidden": 2,
    }
    # The Executor's memory now matches: the next turn needs no rebuild.
    model.queue(Reply.say("fine"))
    result = run(client, session_id, "five")
    assert conversation(model.requests[-1].body)[-3:] == [
        ("user", "four"),
        ("assistant", "again"),
        ("user", "five"),
    ]
    assert len(conversation(model.requests[-1].body)) == 5
    with pytest.raises(openai.BadRequestError):
        x_post(client, surface, f"/x/v1/sessions/{session_id}/rewind", {"turns": 4})
    with pytest.raises(openai.BadRequestError):
        x_post(client, surface, f"/x/v1/sessions/{session_id}/rewind", {"turns": 0})


def test_another_project_cannot_fork_or_rewind(client: OpenAI, surface: Surface) -> None:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="hi", stream=True
        )
    )
    session_id = str(events[0].session.id)
    _, key = surface.project("other")
    other = surface.client(key)
    with pytest.raises(openai.NotFoundError):
        x_post(other, surface, f"/x/v1/sessions/{session_id}/fork", {})
    with pytest.raises(openai.NotFoundError):
        x_post(other, surface, f"/x/v1/sessions/{session_id}/rewind", {"turns": 1})


def test_a_fork_whose_snapshot_vanished_fails_its_turn_and_leaves_no_workspace(
    client: OpenAI, surface: Surface
) -> None:
    parent = scripted_hosted(client, "/write a.txt first")
    fork = x_post(client, surface, f"/x/v1/sessions/{parent.id}/fork", {})
    snapshots = surface.server.data_dir / "snapshots" / wire_uuid(parent.environment.id)  # type: ignore[union-attr]
    shutil.rmtree(snapshots)
    with (
        client.beta.agents.sessions.stream(fork["id"], input="/say hello") as stream,
        pytest.raises(AgentTurnResultError),
    ):
        stream.get_final_result()
    turn = client.beta.agents.sessions.turns.list(fork["id"], order="desc").data[0]
    assert turn.status == "failed"
    assert turn.x_corebox["error_code"] == "execution_unavailable"  # type: ignore[attr-defined]
    assert "resource_unavailable" in (turn.error.message if turn.error else "")
    assert not workspace(surface, fork["environment"]["id"]).exists()


def test_a_fork_of_a_fork_copies_only_the_forks_own_turns_workspaces(
    client: OpenAI, surface: Surface
) -> None:
    parent = scripted_hosted(client, "/write a.txt first")
    fork = x_post(client, surface, f"/x/v1/sessions/{parent.id}/fork", {})
    copied_turn = turn_ids(client, fork["id"])[0]
    with pytest.raises(openai.ConflictError):
        x_post(client, surface, f"/x/v1/sessions/{fork['id']}/fork", {"turn_id": copied_turn})
    scripted_turn(client, fork["id"], "/write b.txt in the fork")
    again = x_post(client, surface, f"/x/v1/sessions/{fork['id']}/fork", {})
    scripted_turn(client, again["id"], "/say hello")
    grandchild = workspace(surface, again["environment"]["id"])
    assert (grandchild / "a.txt").read_text() == "first"
    assert (grandchild / "b.txt").read_text() == "in the fork"


def test_a_retried_fork_with_its_idempotency_key_answers_the_same_session(
    client: OpenAI, surface: Surface
) -> None:
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input="hi", stream=True
        )
    )
    session_id = str(events[0].session.id)
    path = f"{surface.server.base_url}/x/v1/sessions/{session_id}/fork"
    headers = {"Idempotency-Key": "fork-once"}
    first = client.post(path, cast_to=object, body={}, options={"headers": headers})
    again = client.post(path, cast_to=object, body={}, options={"headers": headers})
    assert first["id"] == again["id"]  # type: ignore[index]
    other = client.post(
        path, cast_to=object, body={}, options={"headers": {"Idempotency-Key": "2"}}
    )
    assert other["id"] != first["id"]  # type: ignore[index]
    with pytest.raises(openai.ConflictError):
        client.post(
            path,
            cast_to=object,
            body={"turn_id": turn_ids(client, session_id)[0]},
            options={"headers": headers},
        )
    # A session-creation key of the same text is a different key.
    created = client.beta.agents.sessions.create(
        agent={"model": "scripted"},
        environment={"type": "none"},
        input="hi",
        extra_headers=headers,
    )
    assert created.id not in (first["id"], session_id)  # type: ignore[index]


def test_a_forks_usage_is_the_sum_over_its_own_turns(
    client: OpenAI, surface: Surface, model: ModelServer
) -> None:
    parent = builtin_session(client, model, "one", "two", "three")
    second = turn_ids(client, parent)[1]
    fork = x_post(client, surface, f"/x/v1/sessions/{parent}/fork", {"turn_id": second})
    copied = client.beta.agents.sessions.turns.list(fork["id"], order="asc").data
    assert len(copied) == 2 and all(t.usage is not None for t in copied)
    usage = client.beta.agents.sessions.retrieve(fork["id"]).usage
    assert usage is not None
    assert usage.total_tokens == sum(t.usage.total_tokens for t in copied)  # type: ignore[union-attr]
    assert usage.input_tokens == sum(t.usage.input_tokens for t in copied)  # type: ignore[union-attr]
    parent_usage = client.beta.agents.sessions.retrieve(parent).usage
    assert parent_usage is not None and parent_usage.total_tokens > usage.total_tokens


def scripted_session(client: OpenAI, text: str) -> str:
    """A scripted session whose first turn (`text`) has ended."""
    events = list(
        client.beta.agents.sessions.create(
            agent={"model": "scripted"}, environment={"type": "none"}, input=text, stream=True
        )
    )
    return str(events[0].session.id)  # type: ignore[attr-defined]


def test_a_retried_rewind_with_its_idempotency_key_hides_nothing_more(
    client: OpenAI, surface: Surface
) -> None:
    session_id = scripted_session(client, "one")
    for text in ("two", "three"):
        scripted_turn(client, session_id, text)
    ids = turn_ids(client, session_id)
    path = f"{surface.server.base_url}/x/v1/sessions/{session_id}/rewind"

    def rewind(body: dict[str, Any], key: str) -> Any:
        headers = {"Idempotency-Key": key}
        return client.post(path, cast_to=object, body=body, options={"headers": headers})

    first = rewind({"turns": 1}, "rewind-once")
    again = rewind({"turns": 1}, "rewind-once")  # the answer was lost; the client retries
    assert again == first and first["hidden_turn_ids"] == ids[2:]
    session = client.beta.agents.sessions.retrieve(session_id)
    assert session.x_corebox["hidden_turn_ids"] == ids[2:]  # type: ignore[attr-defined]
    with pytest.raises(openai.ConflictError):
        rewind({"turns": 2}, "rewind-once")  # the key names another request
    assert rewind({"turns": 1}, "rewind-twice")["hidden_turn_ids"] == ids[1:2]
    # Keys are the session's own: the same key on another session is a new rewind.
    other = scripted_session(client, "x")
    elsewhere = client.post(
        f"{surface.server.base_url}/x/v1/sessions/{other}/rewind",
        cast_to=object,
        body={"turns": 1},
        options={"headers": {"Idempotency-Key": "rewind-once"}},
    )
    assert elsewhere["session_id"] == other and elsewhere["id"] != first["id"]


def test_a_fork_carries_the_subagents_its_items_opened_as_its_own(
    client: OpenAI, surface: Surface
) -> None:
    """Every id a fork shows resolves through the fork: the subagent a copied
    `create_subagent_call` opened is copied with its turns and items, and the call names
    the copy; a subagent opened after the fork point stays the parent's."""
    sessions = client.beta.agents.sessions
    events = list(
        sessions.create(
            agent={"model": "scripted", "multi_agent": {"enabled": True}},
            environment={"type": "none"},
            input="/subagent hi\n/say {subagent}",
            stream=True,
        )
    )
    parent = str(events[0].session.id)
    scripted_turn(client, parent, "/subagent later\n/say {subagent}")
    first_turn = turn_ids(client, parent)[0]
    originals = sessions.subagents.list(parent, order="asc").data
    assert [s.name for s in originals] == ["subagent-1", "subagent-2"]

    fork = x_post(client, surface, f"/x/v1/sessions/{parent}/fork", {"turn_id": first_turn})
    fork_id = fork["id"]
    (copy,) = sessions.subagents.list(fork_id).data
    assert copy.id != originals[0].id and copy.session_id == fork_id
    assert (copy.name, copy.status, copy.parent_agent_id) == (
        "subagent-1",
        "closed",
        originals[0].parent_agent_id,
    )
    assert sessions.subagents.retrieve(copy.id, session_id=fork_id) == copy
    (call,) = [i for i in sessions.items.list(fork_id).data if i.type == "create_subagent_call"]
    assert call.x_corebox["subagent_id"] == copy.id  # type: ignore[union-attr]
    (fork_turn,) = sessions.turns.list(fork_id).data
    assert call.agent_id == fork_turn.agent_id == copy.parent_agent_id  # type: ignore[union-attr]
    (sub_turn,) = sessions.subagents.turns.list(copy.id, session_id=fork_id).data
    assert (sub_turn.session_id, sub_turn.subagent_id) == (fork_id, copy.id)
    (parent_sub_turn,) = sessions.subagents.turns.list(originals[0].id, session_id=parent).data
    assert sub_turn.id != parent_sub_turn.id
    copied = sessions.subagents.turns.items.list(
        sub_turn.id, session_id=fork_id, subagent_id=copy.id, order="asc"
    ).data
    assert [(i.role, i.content[0].text) for i in copied] == [  # type: ignore[union-attr]
        ("user", "hi"),
        ("assistant", "hi"),
    ]
    listed = sessions.subagents.items.list(copy.id, session_id=fork_id, order="asc").data
    assert [i.id for i in listed] == [i.id for i in copied]
    # The parent's subagents are not the fork's, nor the fork's the parent's.
    with pytest.raises(openai.NotFoundError):
        sessions.subagents.retrieve(originals[0].id, session_id=fork_id)
    with pytest.raises(openai.NotFoundError):
        sessions.subagents.retrieve(copy.id, session_id=parent)
    assert [s.id for s in sessions.subagents.list(parent, order="asc").data] == [
        s.id for s in originals
    ]
    # The fork names its next subagent after its own.
    scripted_turn(client, fork_id, "/subagent again\n/say {subagent}")
    names = [s.name for s in sessions.subagents.list(fork_id, order="asc").data]
    assert names == ["subagent-1", "subagent-2"]
    # A fork before the call carries no subagent.
    user_item = sessions.items.list(parent, order="asc").data[0]
    early = x_post(client, surface, f"/x/v1/sessions/{parent}/fork", {"item_id": user_item.id})
    assert sessions.subagents.list(early["id"]).data == []

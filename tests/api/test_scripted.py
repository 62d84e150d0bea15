"""The `scripted` harness through the official SDK: every directive this build can
reach, and the capability matrix at
admission (function calls, permissions, choices, steering and cancellation are in
test_turns.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.api.support import Surface


def run(client: OpenAI, text: str, **session: Any) -> tuple[str, list[Any]]:
    """Create a scripted session whose first turn is `text`; return (id, its events)."""
    agent = {"model": "scripted", **session.pop("agent", {})}
    events = list(
        client.beta.agents.sessions.create(
            agent=agent,  # type: ignore[arg-type]
            environment=session.pop("environment", {"type": "none"}),
            input=text,
            stream=True,
            **session,
        )
    )
    # Every turn ends idle, a failed one too; only an environment that cannot be
    # prepared fails the session.
    assert events[-1].type == "agent.session.idle"
    return str(events[0].session.id), events


def items(client: OpenAI, session_id: str) -> list[Any]:
    return list(client.beta.agents.sessions.items.list(session_id, order="asc").data)


def only_turn(client: OpenAI, session_id: str) -> Any:
    turns = client.beta.agents.sessions.turns.list(session_id).data
    assert len(turns) == 1
    return turns[0]


def replies(client: OpenAI, session_id: str) -> list[tuple[str | None, str]]:
    return [
        (i.phase, i.content[0].text)
        for i in items(client, session_id)
        if i.type == "message" and i.role == "assistant"
    ]


def refusal(caught: pytest.ExceptionInfo[openai.BadRequestError]) -> tuple[Any, Any, str]:
    """A refused request's `code`, `param` and message, as the server wrote them."""
    error = caught.value.body
    assert isinstance(error, dict)
    return error["code"], error["param"], error["message"]


def test_plain_text_is_replied_verbatim_in_deltas_of_at_most_16_characters(
    client: OpenAI,
) -> None:
    text = "The quick brown fox jumps over the lazy dog"
    session_id, events = run(client, text)
    deltas = [e.delta for e in events if e.type == "agent.session.turn.output_text.delta"]
    assert "".join(deltas) == text
    assert max(len(d) for d in deltas) == 16
    assert replies(client, session_id) == [("final_answer", text)]


def test_say_directives_stream_one_message_each_and_only_the_last_is_final(
    client: OpenAI,
) -> None:
    session_id, _ = run(client, "ignored plain text\n/say first\n/say second")
    assert replies(client, session_id) == [("commentary", "first"), ("final_answer", "second")]


def test_an_empty_reply_is_still_a_completed_message(client: OpenAI) -> None:
    session_id, _ = run(client, "/sleep 1")
    assert replies(client, session_id) == [("final_answer", "")]
    assert only_turn(client, session_id).status == "completed"


def test_think_emits_a_reasoning_item(client: OpenAI) -> None:
    session_id, _ = run(client, "/think weighing the options\n/say done")
    reasoning = [i for i in items(client, session_id) if i.type == "reasoning"]
    assert [r.summary[0].text for r in reasoning] == ["weighing the options"]


def test_command_emits_a_command_execution_item_and_runs_nothing(client: OpenAI) -> None:
    session_id, _ = run(client, "/command rm -rf /tmp/not-really\n/say ran")
    commands = [i for i in items(client, session_id) if i.type == "command_execution"]
    assert len(commands) == 1
    command = commands[0]
    assert (command.command, command.exit_code, command.output, command.status) == (
        "rm -rf /tmp/not-really",
        0,
        "ok",
        "completed",
    )


@pytest.mark.parametrize(
    "code",
    [
        "rate_limit_exceeded",
        "authentication_error",
        "server_overloaded",
        "context_length_exceeded",
        "request_timeout",
    ],
)
def test_fail_classifies_the_turn_error(client: OpenAI, code: str) -> None:
    session_id, _ = run(client, f"/say partial\n/fail {code}")
    turn = only_turn(client, session_id)
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == code
    assert turn.x_corebox["engine_error_code"] == code  # type: ignore[attr-defined]
    assert turn.x_corebox["engine_http_status"] is None  # type: ignore[attr-defined]


def test_fail_connection_failed_keeps_its_http_status(client: OpenAI) -> None:
    session_id, _ = run(client, "/fail connection_failed 502")
    turn = only_turn(client, session_id)
    assert turn.error is not None and turn.error.code == "connection_failed"
    assert turn.x_corebox["engine_http_status"] == 502  # type: ignore[attr-defined]


def test_an_unknown_failure_code_stays_unclassified(client: OpenAI) -> None:
    session_id, _ = run(client, "/fail teapot 418")
    turn = only_turn(client, session_id)
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "internal_error"
    assert turn.x_corebox["engine_error_code"] is None  # type: ignore[attr-defined]


def test_usage_directive_reports_those_counts(client: OpenAI) -> None:
    session_id, _ = run(client, "/usage 120 30\n/say ok")
    usage = only_turn(client, session_id).usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (120, 30, 150)


def test_without_usage_the_counts_are_words(client: OpenAI) -> None:
    session_id, _ = run(client, "one two three")
    usage = only_turn(client, session_id).usage
    assert (usage.input_tokens, usage.output_tokens) == (3, 3)


def test_stream_sends_n_single_character_deltas(client: OpenAI) -> None:
    _, events = run(client, "/stream 40")
    deltas = [e.delta for e in events if e.type == "agent.session.turn.output_text.delta"]
    assert deltas == ["x"] * 40


def test_write_without_a_local_environment_fails_clearly(client: OpenAI) -> None:
    session_id, _ = run(client, "/write notes.txt hello")
    turn = only_turn(client, session_id)
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "invalid_request"
    assert "local environment" in turn.error.message


def test_write_in_a_self_hosted_workspace(client: OpenAI, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session_id, _ = run(
        client,
        "/write /workspace/notes/a.txt hello there\n/say written",
        environment={"type": "self_hosted", "workspace_directory": str(workspace)},
    )
    assert only_turn(client, session_id).status == "completed"
    assert (workspace / "notes" / "a.txt").read_text() == "hello there"


def test_structured_output_is_refused_at_admission(surface: Surface) -> None:
    client = surface.new_client()  # a project of its own: nothing may be created in it
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.create(
            agent={
                "model": "scripted",
                "text": {"format": {"type": "json_schema", "schema": schema}},  # type: ignore[typeddict-item]
            },
            environment={"type": "none"},
            input="hi",
        )
    assert refusal(caught) == (
        "unsupported_or_invalid_configuration",
        "agent.text.format",
        "The scripted harness cannot provide structured_output, needed because"
        " text.format is json_schema: the scripted harness writes what it is told,"
        " never to a schema.",
    )
    assert client.beta.agents.sessions.list().data == []


def test_an_http_mcp_tool_is_refused_for_scripted(client: OpenAI) -> None:
    tool = {
        "type": "mcp",
        "server_label": "calc",
        "transport": {"type": "http", "server_url": "http://127.0.0.1:9/mcp"},
    }
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.create(
            agent={"model": "scripted", "tools": [tool]},  # type: ignore[list-item]
            environment={"type": "none"},
            input="hi",
        )
    assert refusal(caught) == (
        "unsupported_or_invalid_configuration",
        "agent.tools[0].transport",
        "The scripted harness cannot provide mcp_http_tools, needed because the agent"
        " declares an MCP server over HTTP: the scripted harness calls no MCP servers.",
    )


def test_web_search_is_kept_on_the_agent_and_refused_where_a_session_needs_it(
    client: OpenAI,
) -> None:
    agent = client.beta.agents.create(model="scripted", tools=[{"type": "web_search"}])
    assert [tool.type for tool in agent.tools or []] == ["web_search"]
    before = client.beta.agents.sessions.list().data
    with pytest.raises(openai.BadRequestError) as caught:
        client.beta.agents.sessions.create(
            agent_id=agent.id, environment={"type": "none"}, input="hi"
        )
    assert refusal(caught) == (
        "unsupported_or_invalid_configuration",
        "agent.tools[0]",
        "The scripted harness cannot provide web_search, needed because the agent"
        " declares web_search: no harness has a web search tool.",
    )
    assert client.beta.agents.sessions.list().data == before
    # Turned off, the tool needs nothing: the session is admitted.
    session = client.beta.agents.sessions.create(
        agent={"model": "scripted", "tools": [{"type": "web_search", "mode": "disabled"}]},
        environment={"type": "none"},
        input="hi",
    )
    assert session.id.startswith("sess_")


def test_lossy_conversions_are_flagged_on_the_session(client: OpenAI) -> None:
    session_id, _ = run(
        client, "hi", agent={"text": {"verbosity": "low"}, "reasoning": {"effort": "high"}}
    )
    session = client.beta.agents.sessions.retrieve(session_id)
    extension = session.x_corebox  # type: ignore[attr-defined]
    notes = {n["feature"]: n["support"] for n in extension["capability_notes"]}
    assert notes == {"text_verbosity": "lossy", "reasoning_effort": "lossy"}
    assert session.x_corebox["harness"] == "scripted"  # type: ignore[attr-defined]
    assert session.x_corebox["model_provider"] is None  # type: ignore[attr-defined]

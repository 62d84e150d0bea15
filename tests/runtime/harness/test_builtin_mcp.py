"""HTTP MCP tools in the builtin harness: listed, offered as functions, called with the
bearer token, observed as `tool_call` frames, results passed back to the model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from runtime.harness.base import Unavailable
from runtime.proto.execution import MCPHTTPServer
from tests.runtime.harness.builtin_support import Recording, configuration, executor, text
from tests.support.mcp_server import TOKEN, McpTestServer
from tests.support.model_server import ModelServer, Reply


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer().running() as server:
        yield server


@pytest.fixture
def tools() -> Iterator[McpTestServer]:
    with McpTestServer().running() as server:
        yield server


def server(url: str, token: str = TOKEN, **kwargs: object) -> MCPHTTPServer:
    return MCPHTTPServer(
        connection_origin="service",
        server_label="calc",
        server_url=url,
        allowed_tools=kwargs.pop("allowed", None),  # type: ignore[arg-type]
        bearer_token=token,
        **kwargs,  # type: ignore[arg-type]
    )


def play(cfg: object, value: str) -> Recording:
    context = Recording()

    async def main() -> None:
        run = await executor(cfg)  # type: ignore[arg-type]
        try:
            await run.run("run_1", text(value), context)
        finally:
            await run.close()

    asyncio.run(main())
    return context


def test_an_mcp_tool_is_called_with_the_bearer_token(
    model: ModelServer, tools: McpTestServer
) -> None:
    model.queue(Reply.call("calc__add", {"a": 2, "b": 3}), Reply.say("It is 5."))
    context = play(configuration(model.base_url, mcp=[server(tools.url)]), "2+3?")
    assert tools.calls == [("add", {"a": 2, "b": 3})]
    before, after = context.of("tool_call")
    assert (before.stage, after.stage) == ("before", "after")
    assert after.observation.kind == "mcp_tool_call"
    assert (after.observation.server, after.observation.name) == ("calc", "add")
    assert after.observation.output == "5" and after.observation.status == "completed"
    offered = {t["function"]["name"] for t in model.requests[0].body["tools"]}
    assert offered == {"calc__add", "calc__shout"}
    assert model.requests[1].body["messages"][-1] == {
        "role": "tool",
        "tool_call_id": model.requests[1].body["messages"][-2]["tool_calls"][0]["id"],
        "content": "5",
    }
    assert context.of("output_message")[-1].text == "It is 5."


def test_allowed_tools_limit_what_the_model_sees(model: ModelServer, tools: McpTestServer) -> None:
    model.queue(Reply.say("ok"))
    play(configuration(model.base_url, mcp=[server(tools.url, allowed=["shout"])]), "hi")
    assert [t["function"]["name"] for t in model.requests[0].body["tools"]] == ["calc__shout"]


def test_an_unreachable_optional_server_is_skipped(
    model: ModelServer, tools: McpTestServer
) -> None:
    model.queue(Reply.say("ok"))
    context = play(configuration(model.base_url, mcp=[server(tools.url, token="wrong")]), "hi")
    assert tools.refused >= 1
    assert "tools" not in model.requests[0].body
    assert context.of("output_message")[-1].text == "ok"


def test_an_unreachable_required_server_fails_the_turn_before_the_model_is_called(
    model: ModelServer, tools: McpTestServer
) -> None:
    with pytest.raises(Unavailable, match="calc"):
        play(
            configuration(model.base_url, mcp=[server(tools.url, token="wrong", required=True)]),
            "hi",
        )
    assert model.requests == []

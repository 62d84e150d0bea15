"""The session-to-wire mappings, without an event loop or a connection: what a device
must declare to run a session's turns (seed 000 admission table)."""

from __future__ import annotations

from typing import Any

from allinone.core.orchestration.configuration import local_environment, required_capabilities
from runtime.proto.capabilities import ALWAYS_REQUIRED


def _session(agent: dict[str, Any], environment: dict[str, Any]) -> dict[str, Any]:
    return {"agent": {"model": "scripted", **agent}, "environment": environment}


def test_a_plain_session_needs_the_base_set_and_no_environment() -> None:
    required = required_capabilities(_session({}, {"type": "none"}))
    assert required[: len(ALWAYS_REQUIRED)] == list(ALWAYS_REQUIRED)
    assert set(required) - set(ALWAYS_REQUIRED) == {"environment_none", "subagent_control"}


def test_tools_environment_and_structured_output_each_add_their_capabilities() -> None:
    agent = {
        "tools": [
            {"type": "function", "name": "f"},
            {
                "type": "mcp",
                "transport": {"type": "http"},
                "required": True,
                "credential_id": "cred_1",
            },
        ],
        "text": {"format": {"type": "json_schema", "schema": {}}},
        "multi_agent": {"enabled": True},
    }
    required = set(required_capabilities(_session(agent, {"type": "openai_hosted"})))
    assert {
        "local_environment",
        "workspace_read_preparation",
        "workspace_output_export",
        "function_tools",
        "mcp_http_tools",
        "mcp_http_required",
        "mcp_http_bearer_auth",
        "structured_output",
        "message_items",
        "subagent_observations",
    } <= required
    assert not {"environment_none", "subagent_control"} & required


def test_a_session_that_already_started_a_turn_needs_native_session_recovery() -> None:
    fresh = _session({}, {"type": "none"})
    assert "native_session_recovery" not in required_capabilities(fresh)
    assert "native_session_recovery" in required_capabilities({**fresh, "has_started_turn": 1})


def test_a_forked_managed_environment_travels_with_its_seed() -> None:
    session = _session({}, {"type": "openai_hosted"})
    session.update(
        environment_id="env_2",
        environment_seed_wire_id="5d1c0f0e-0000-4000-8000-000000000001",
        environment_seed_snapshot="turn_1",
    )
    bound = local_environment(session)
    assert bound is not None and bound.seed is not None
    assert (bound.seed.environment_id, bound.seed.snapshot) == (
        "5d1c0f0e-0000-4000-8000-000000000001",
        "turn_1",
    )


def test_only_a_bound_environment_travels_as_a_local_environment() -> None:
    assert local_environment(_session({}, {"type": "none"})) is None
    session = _session({}, {"type": "openai_hosted", "workspace_directory": "/w"})
    session["environment_id"] = "env_1"
    bound = local_environment(session)
    assert bound is not None
    assert (bound.type, bound.workspace_directory) == ("openai_hosted", "/w")

"""`execution_prepare` and `execution_start` refuse what a Runtime must not act on, each
with the finite code the seed names and a text that never quotes a secret."""

from __future__ import annotations

import msgspec
import pytest

from runtime.proto import execution, limits
from runtime.proto.errors import ValidationError
from runtime.proto.initialization import CapabilitySources, SkillMetadata
from runtime.proto.inputs import InputText, Message

INVALID = "invalid_configuration"
SECRET = "sk-secret-value-0123"
UUID = "4f1c2b7e-3d4a-4b5c-8d6e-7f8091a2b3c4"


def configuration(**fields: object) -> execution.ExecutionConfiguration:
    base: dict[str, object] = {
        "agent_kind": "builtin",
        "agent_options": execution.AgentOptions(model="m"),
        "execution_controls": execution.ExecutionControls("disabled", "medium", True),
        "disable_execution_environment": True,
    }
    return execution.ExecutionConfiguration(**{**base, **fields})  # type: ignore[arg-type]


def refused(config: execution.ExecutionConfiguration) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        execution.ExecutionPrepare("session", config).validate()
    return caught.value


def provider(**fields: object) -> execution.ModelProvider:
    base: dict[str, object] = {
        "protocol": "chat_completions",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": SECRET,
    }
    return execution.ModelProvider(**{**base, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "fields",
    [
        {"base_url": "ftp://host/v1"},
        {"base_url": "http://user:pw@host/v1"},
        {"base_url": "http://host/v1?key=x"},
        {"api_key": "  "},
        {"api_key": "a\nb"},
        {"api_key": "k" * (limits.MAX_API_KEY_BYTES + 1)},
        {"context_window": -1},
        {"context_window": 100, "max_output_tokens": 200},
    ],
)
def test_a_model_provider_that_cannot_be_used_safely_is_refused(fields: dict[str, object]) -> None:
    options = execution.AgentOptions(model="m", model_provider=provider(**fields))
    error = refused(configuration(agent_options=options))
    assert error.code == INVALID
    assert SECRET not in str(error)


def test_an_mcp_server_is_checked_and_labels_are_unique() -> None:
    def server(**fields: object) -> execution.MCPHTTPServer:
        base: dict[str, object] = {
            "connection_origin": "service",
            "server_label": "docs",
            "server_url": "http://127.0.0.1:9/mcp",
            "allowed_tools": None,
        }
        return execution.MCPHTTPServer(**{**base, **fields})  # type: ignore[arg-type]

    for bad in (
        server(server_url="file:///etc/passwd"),
        server(server_label=""),
        server(bearer_token="a\r\nInjected: 1"),
    ):
        assert refused(configuration(mcp_http_servers=[bad])).code == INVALID
    twice = refused(configuration(mcp_http_servers=[server(), server()]))
    assert "unique" in str(twice)


def test_only_a_managed_workspace_is_seeded_from_a_named_snapshot() -> None:
    seed = execution.WorkspaceSeed(environment_id=UUID, snapshot="")
    local = execution.LocalEnvironment(id=UUID, type="openai_hosted", seed=seed)
    error = refused(configuration(disable_execution_environment=False, local_environment=local))
    assert error.code == INVALID
    hosted = execution.LocalEnvironment(
        id=UUID, type="self_hosted", workspace_directory="/w", seed=seed
    )
    config = configuration(disable_execution_environment=False, local_environment=hosted)
    assert refused(config).code == INVALID


def test_capability_sources_and_harness_config_are_bounded() -> None:
    sources = CapabilitySources(skills=[SkillMetadata(name="../escape", description="x")])
    local = execution.LocalEnvironment(id=UUID, type="openai_hosted", capability_sources=sources)
    config = configuration(disable_execution_environment=False, local_environment=local)
    assert "capability sources" in str(refused(config))
    big = {"blob": "x" * (limits.MAX_HARNESS_CONFIG_BYTES + 1)}
    options = execution.AgentOptions(model="m", harness_config=big)
    assert "too large" in str(refused(configuration(agent_options=options)))


@pytest.mark.parametrize(
    "variables",
    [
        {f"V{n}": "x" for n in range(limits.MAX_COMMAND_ENVIRONMENT_ENTRIES + 1)},
        {"1BAD": "x"},
        {"GOOD": ""},
        {"GOOD": SECRET + "\n"},
    ],
)
def test_command_environment_is_checked_without_quoting_a_value(
    variables: dict[str, str],
) -> None:
    error = refused(configuration(command_environment=variables))
    assert error.code == INVALID
    assert SECRET not in str(error)


def test_a_start_with_a_resume_cursor_too_large_is_refused() -> None:
    message = [Message([InputText("hi")])]
    start = execution.ExecutionStart(
        "executor", "handle", "run", message, resume="c" * (limits.MAX_RESUME_CURSOR_BYTES + 1)
    )
    with pytest.raises(ValidationError) as caught:
        start.validate()
    assert caught.value.code == "invalid_start"
    start = msgspec.structs.replace(start, resume="cursor")
    start.validate()  # within the bound

"""The codex adapter's pure parts: error classification by variant and status (never by
text), the version rule, input mapping, observations, and what it declares and
registers with and without the CLI."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from runtime.harness.base import Unavailable
from runtime.harness.codex.adapter import DECLARATION, CodexHarness
from runtime.harness.codex.cli import Cli, known, probe
from runtime.harness.codex.errors import classify
from runtime.harness.codex.turn import observation, user_input
from runtime.harness.registry import HarnessRegistry
from runtime.proto.execution import (
    AgentOptions,
    ExecutionConfiguration,
    ExecutionControls,
    ModelProvider,
)
from runtime.proto.inputs import InputImage, InputText, Message


@pytest.mark.parametrize(
    ("info", "code", "status"),
    [
        ("contextWindowExceeded", "context_length_exceeded", 0),
        ("usageLimitExceeded", "usage_limit_exceeded", 0),
        ("rateLimitExceeded", "rate_limit_exceeded", 0),
        ("serverOverloaded", "server_overloaded", 0),
        ("unauthorized", "authentication_error", 0),
        ("badRequest", "invalid_request", 0),
        ("modelNotFound", "resource_not_found", 0),
        ("cyberPolicy", "cyber_policy", 0),
        ("internalServerError", "server_error", 0),
        ("sandboxError", "", 0),
        ("other", "", 0),
        ({"responseTooManyFailedAttempts": {"httpStatusCode": 429}}, "rate_limit_exceeded", 0),
        ({"responseStreamDisconnected": {"httpStatusCode": 401}}, "authentication_error", 0),
        ({"httpConnectionFailed": {"httpStatusCode": 502}}, "server_error", 0),
        ({"httpConnectionFailed": {"httpStatusCode": None}}, "connection_failed", 0),
        ({"responseStreamConnectionFailed": {"httpStatusCode": 418}}, "connection_failed", 418),
        ({"activeTurnNotSteerable": {"turnKind": "review"}}, "", 0),
        (None, "", 0),
    ],
)
def test_failures_are_classified_by_variant_and_status(info: Any, code: str, status: int) -> None:
    failure = classify(
        {"message": "rate limit exceeded: the prompt was PROMPT-TEXT", "codexErrorInfo": info}
    )
    assert (failure.engine_code, failure.http_status) == (code, status)
    assert "PROMPT-TEXT" not in str(failure)  # the CLI's message is never quoted


def test_the_message_text_never_classifies() -> None:
    assert (
        classify({"message": "429 rate_limit_exceeded", "codexErrorInfo": None}).engine_code == ""
    )
    assert classify("not an object").engine_code == ""


@pytest.mark.parametrize(
    ("version", "ok"),
    [("0.171.0", True), ("0.171.9", True), ("0.170.3", False), ("1.171.0", False), ("x", False)],
)
def test_only_known_series_are_accepted(version: str, ok: bool) -> None:
    assert known(version) is ok


def test_a_missing_or_silent_cli_is_absent(tmp_path: Path) -> None:
    assert probe(str(tmp_path / "no-such-codex")) is None
    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\necho 'codex-cli 0.99.0'\n")
    fake.chmod(0o755)
    assert probe(str(fake)) is None  # a version the adapter does not know
    fake.write_text("#!/bin/sh\necho 'codex-cli 0.171.4'\n")
    assert probe(str(fake)) == Cli(path=str(fake), version="0.171.4")


def test_input_maps_text_and_images() -> None:
    messages = [
        Message(
            content=[InputText(text="look"), InputImage(image_url="data:image/png;base64,AA==")]
        )
    ]
    assert user_input(messages) == [
        {"type": "text", "text": "look", "text_elements": []},
        {"type": "image", "url": "data:image/png;base64,AA=="},
    ]


def test_a_command_item_becomes_a_command_execution_observation() -> None:
    item = {
        "type": "commandExecution",
        "id": "call_1",
        "command": "/bin/bash -lc 'touch a'",
        "cwd": "/w",
        "status": "completed",
        "exitCode": 0,
        "durationMs": 12,
        "aggregatedOutput": "",
    }
    seen = observation("commandExecution", item)
    assert (seen.kind, seen.status, seen.command, seen.exit_code) == (
        "command_execution",
        "completed",
        "/bin/bash -lc 'touch a'",
        0,
    )
    declined = observation("commandExecution", {**item, "status": "declined"})
    assert declined.status == "failed"


def configuration(provider: bool) -> ExecutionConfiguration:
    return ExecutionConfiguration(
        agent_kind="codex",
        agent_options=AgentOptions(
            model="m",
            model_provider=ModelProvider(
                protocol="responses", base_url="http://127.0.0.1:9/v1", api_key="k"
            )
            if provider
            else None,
        ),
        execution_controls=ExecutionControls(
            web_search="disabled", text_verbosity="medium", disable_programmatic_tool_calling=True
        ),
        disable_execution_environment=True,
    )


def test_without_the_cli_the_harness_registers_unavailable(tmp_path: Path) -> None:
    registry = HarnessRegistry()
    registry.register(CodexHarness(None, tmp_path))
    (declared,) = registry.supported_kinds()
    assert (declared.kind, declared.available, declared.version) == ("codex", False, "")
    assert declared.capabilities == DECLARATION
    with pytest.raises(Unavailable, match="npm install -g @openai/codex"):
        asyncio.run(CodexHarness(None, tmp_path).create_executor("e", configuration(True)))


def test_an_executor_needs_a_responses_provider(tmp_path: Path) -> None:
    harness = CodexHarness(Cli(path="/bin/false", version="0.171.0"), tmp_path)
    assert harness.available() and harness.version == "0.171.0"
    with pytest.raises(Unavailable):
        asyncio.run(harness.create_executor("e", configuration(False)))

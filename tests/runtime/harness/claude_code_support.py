"""The real Claude Code CLI for tests: found on PATH at a version the adapter knows, or
installed from its public npm package into build/work/claude-npm by the first test that
needs it. Where neither works, the tests that need it are skipped and say why."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from runtime.harness.claude_code.adapter import installed_version
from runtime.proto.execution import (
    AgentOptions,
    ExecutionConfiguration,
    ExecutionControls,
    LocalEnvironment,
    ModelProvider,
)

ROOT = Path(__file__).resolve().parents[3]
PREFIX = ROOT / "build" / "work" / "claude-npm"
PACKAGE = "@anthropic-ai/claude-code"
INSTALLED = PREFIX / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
INSTALL_TIMEOUT_SECONDS = 600


def claude_command() -> str:
    """A path to a Claude Code CLI the adapter knows; skips the test when there is none."""
    on_path = shutil.which("claude")
    if on_path is not None and installed_version(on_path):
        return on_path
    if not (INSTALLED.exists() and installed_version(str(INSTALLED))):
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("Claude Code is not installed and npm is missing to install it")
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(PREFIX), PACKAGE],
            capture_output=True,
            timeout=INSTALL_TIMEOUT_SECONDS,
            check=False,
        )
        if done.returncode != 0 or not INSTALLED.exists():
            pytest.skip(f"npm could not install {PACKAGE} (exit {done.returncode})")
    if not installed_version(str(INSTALLED)):
        pytest.skip(f"the installed {PACKAGE} is not a version the adapter knows")
    return str(INSTALLED)


def configuration(
    base_url: str, workspace: Path | None = None, agent_session_id: str = ""
) -> ExecutionConfiguration:
    return ExecutionConfiguration(
        agent_kind="claude_code",
        agent_options=AgentOptions(
            model="test-model",
            system_prompt="Be brief.",
            model_provider=ModelProvider(
                protocol="anthropic_messages", base_url=base_url, api_key="sk-test-secret"
            ),
        ),
        execution_controls=ExecutionControls(
            web_search="disabled", text_verbosity="medium", disable_programmatic_tool_calling=True
        ),
        disable_execution_environment=workspace is None,
        local_environment=(
            LocalEnvironment(
                id="00000000-0000-4000-8000-000000000001",
                type="self_hosted",
                workspace_directory=str(workspace),
            )
            if workspace is not None
            else None
        ),
        agent_session_id=agent_session_id,
        disable_subagents=True,
    )

"""The installed Claude Code CLI: where it is, which version it is, and the command line
and environment of one process.

The adapter knows the streaming JSON mode and control protocol of the 2.x CLI
(`KNOWN_VERSIONS`); any other version, or no CLI at all, makes the harness unavailable.
The environment of a process is the Runtime's own minus every `ANTHROPIC_*` and
`CLAUDE_*` variable, plus the session's model endpoint (`ANTHROPIC_BASE_URL`,
`ANTHROPIC_API_KEY`) when the session names one, the configuration directory when the
Runtime sets one, and switches that turn off the CLI's own traffic (auto-update,
telemetry, error reports), so a loopback endpoint is the only host it talks to.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from runtime.proto.execution import ExecutionConfiguration, ModelProvider

COMMAND = "claude"
KNOWN_VERSIONS = re.compile(r"^2\.1\.\d+$")
KNOWN_RANGE = "2.1.x"
VERSION = re.compile(r"^(\d+\.\d+\.\d+)")
VERSION_TIMEOUT_SECONDS = 30.0
# Built-in tools taken away: the web (web search is always disabled on the wire),
# questions to the user (this adapter does not forward them), and subagents when the
# session disables them.
SUBAGENT_TOOLS = ("Agent", "Task")
ALWAYS_TAKEN = ("WebSearch", "WebFetch", "AskUserQuestion")


def disallowed(configuration: ExecutionConfiguration) -> tuple[str, ...]:
    if configuration.disable_subagents:
        return ALWAYS_TAKEN + SUBAGENT_TOOLS
    return ALWAYS_TAKEN


INSTALL_HINT = "install Claude Code: npm install -g @anthropic-ai/claude-code"

QUIET = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
DROPPED_PREFIXES = ("ANTHROPIC_", "CLAUDE_")


def locate(command: str | None = None) -> str | None:
    """The CLI's path: `command` (a path or a name on PATH), else `claude` on PATH."""
    return shutil.which(command or COMMAND)


def installed_version(command: str | None = None) -> str | None:
    """The installed CLI's version (`2.1.197`), or None when there is no CLI or it does
    not answer `--version` with one."""
    path = locate(command)
    if path is None:
        return None
    try:
        done = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_SECONDS,
            env={**os.environ, **QUIET},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = VERSION.match(done.stdout.strip())
    return match.group(1) if done.returncode == 0 and match else None


def known(version: str | None) -> bool:
    return version is not None and bool(KNOWN_VERSIONS.match(version))


@dataclass(frozen=True)
class Launch:
    """What one CLI process needs; `resume` picks `--resume` over `--session-id`."""

    path: str
    session_id: str
    resume: bool
    model: str
    system_prompt: str
    tools: bool  # False: no built-in tools (a session without a workspace)
    disallowed: tuple[str, ...] = ()  # built-in tools taken away


def argv(launch: Launch) -> list[str]:
    args = [
        launch.path,
        "-p",
        "--output-format",
        "stream-json",
        "--input-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--replay-user-messages",
        "--permission-prompt-tool",
        "stdio",
        "--permission-mode",
        "default",
        "--resume" if launch.resume else "--session-id",
        launch.session_id,
    ]
    if launch.model:
        args += ["--model", launch.model]
    if launch.system_prompt:
        args += ["--append-system-prompt", launch.system_prompt]
    if not launch.tools:
        args += ["--tools", ""]
    elif launch.disallowed:
        args += ["--disallowed-tools", *launch.disallowed]
    return args


def environment(provider: ModelProvider | None, config_dir: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_PREFIXES)}
    env.update(QUIET)
    if provider is not None:
        env["ANTHROPIC_BASE_URL"] = provider.base_url
        env["ANTHROPIC_API_KEY"] = provider.api_key
    if config_dir is not None:
        env["CLAUDE_CONFIG_DIR"] = str(config_dir)
    return env


def transcript_exists(config_dir: Path | None, session_id: str) -> bool:
    """Whether the CLI keeps a transcript of `session_id` (so `--resume` can continue it)."""
    root = (config_dir or Path.home() / ".claude") / "projects"
    return any(root.glob(f"*/{session_id}.jsonl"))

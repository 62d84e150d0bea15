"""Agent configuration: defaults, normalisation and harness resolution.

corebox settings live under `x_corebox`: `harness` (`scripted`, `builtin`, or a harness
over an installed coding-agent CLI: `codex`, `claude_code`),
`model_provider` (see allinone/core/model_providers.py; its API key is stored sealed,
through the `seal_provider` callable the caller passes, and never in plain text), and
`tool_policy` (`{"run_command": "ask" | "allow" | "deny"}`, for workspace commands).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UNSET

from allinone.core import tools as tool_lists
from allinone.core.errors import InvalidRequest
from allinone.core.shapes.models import AgentCreate, AgentUpdate, SessionAgentParam

HARNESSES = ("scripted", "builtin", "codex", "claude_code")
# Harnesses that drive an installed CLI -> what to install when no Runtime offers it.
CLI_HARNESSES: dict[str, str] = {
    "codex": "the Codex CLI (npm install -g @openai/codex) on the Runtime's PATH",
    "claude_code": "Claude Code (npm install -g @anthropic-ai/claude-code) on the Runtime's PATH",
}
# CLI harnesses that find their native session by the corebox session's id; the others
# report the native session's own id when a Run ends, and Core sends that back.
SESSION_KEYED = frozenset({"codex"})
COMMAND_POLICIES = ("ask", "allow", "deny")
# (stored model_provider value, param) -> its stored form with the API key sealed.
SealProvider = Callable[[Any, str], dict[str, Any]]
MAX_METADATA_KEYS = 16
DEFAULT_MAX_SUBAGENTS = 6


def defaults() -> dict[str, Any]:
    return {
        "model": "",
        "name": None,
        "instructions": None,
        "metadata": {},
        "multi_agent": {"enabled": False, "max_concurrent_subagents": None},
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "auto",
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tools": [],
        "compaction": {"async": True},
        "experimental": {"time_awareness": False},
    }


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value)


def check_metadata(metadata: dict[str, str] | None, param: str = "metadata") -> dict[str, str]:
    if not metadata:
        return {}
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidRequest(f"{param} may have at most {MAX_METADATA_KEYS} keys.", param)
    for key, value in metadata.items():
        if not 1 <= len(key) <= 64:
            # An empty key could be stored but never named by a `metadata[k]=v` filter.
            raise InvalidRequest("Metadata keys must be 1-64 characters.", f"{param}.{key}")
        if len(value) > 512:
            raise InvalidRequest("Metadata values may be at most 512 characters.", f"{param}.{key}")
    return dict(metadata)


def normalize_tools(
    tools: list[Any] | None, param: str = "tools", *, session: bool = True
) -> list[Any]:
    """Validate a tool list and return its stored shape (see `allinone.core.tools`)."""
    return tool_lists.normalize(tools, param, session=session)


def apply_fields(
    config: dict[str, Any],
    body: AgentCreate | AgentUpdate | SessionAgentParam,
    *,
    seal_provider: SealProvider | None = None,
) -> None:
    """Copy the fields the body sets onto `config` (omitted keeps, null resets).

    An `x_corebox.model_provider` carrying an `api_key` is stored through
    `seal_provider`; without one, the request is refused rather than storing the key."""
    base = defaults()
    for field in ("model", "instructions", "service_tier"):
        value = getattr(body, field, UNSET)
        if value is not UNSET:
            config[field] = base[field] if value is None else value
    for field in ("reasoning", "text", "multi_agent", "compaction"):
        value = getattr(body, field, UNSET)
        if value is UNSET:
            continue
        if value is None:
            config[field] = base[field]
            continue
        merged = dict(base[field])
        merged.update({k: v for k, v in _builtins(value).items() if v is not None})
        if (
            field == "multi_agent"
            and merged["enabled"]
            and merged["max_concurrent_subagents"] is None
        ):
            merged["max_concurrent_subagents"] = DEFAULT_MAX_SUBAGENTS
        config[field] = merged
    if body.experimental is not UNSET:
        merged = dict(config.get("experimental") or base["experimental"])
        merged.update(_builtins(body.experimental))
        config["experimental"] = merged
    if body.tools is not UNSET:
        inline = isinstance(body, SessionAgentParam)
        config["tools"] = normalize_tools(
            body.tools, "agent.tools" if inline else "tools", session=inline
        )
    if body.x_corebox is not UNSET:
        param = "agent.x_corebox" if isinstance(body, SessionAgentParam) else "x_corebox"
        extension = msgspec.to_builtins(body.x_corebox)
        config["x_corebox"] = check_extension(extension, param, seal_provider)


def check_extension(
    extension: dict[str, Any], param: str, seal_provider: SealProvider | None
) -> dict[str, Any]:
    """Validate the corebox settings this module knows and seal a provider's key."""
    policy = extension.get("tool_policy")
    if policy is not None:
        if not isinstance(policy, dict) or set(policy) - {"run_command"}:
            raise InvalidRequest("tool_policy may set only run_command.", f"{param}.tool_policy")
        if policy.get("run_command", "ask") not in COMMAND_POLICIES:
            raise InvalidRequest(
                "tool_policy.run_command must be ask, allow or deny.",
                f"{param}.tool_policy.run_command",
            )
    provider = extension.get("model_provider")
    if provider is not None:
        where = f"{param}.model_provider"
        if seal_provider is None:
            raise InvalidRequest(
                "A model provider cannot be stored here.",
                where,
                code="unsupported_or_invalid_configuration",
            )
        extension["model_provider"] = seal_provider(provider, where)
    return extension


def from_create(body: AgentCreate, *, seal_provider: SealProvider | None = None) -> dict[str, Any]:
    config = defaults()
    apply_fields(config, body, seal_provider=seal_provider)
    if body.name is not UNSET:
        config["name"] = body.name
    if body.metadata is not UNSET:
        config["metadata"] = check_metadata(body.metadata)
    return config


def harness_for(
    config: dict[str, Any], *, default_provider: bool = False, session_provider: bool = False
) -> str:
    """The harness a session runs on: `x_corebox.harness` when set; `builtin` when the
    agent or the session names a model provider, or when the deployment has a default
    provider and the agent's model is not `scripted`; `scripted` otherwise (the embedded
    default, which needs no model)."""
    extension = config.get("x_corebox") or {}
    harness = extension.get("harness")
    if harness is not None:
        if harness not in HARNESSES:
            raise InvalidRequest(
                f"Unknown harness {str(harness)[:40]!r}.",
                "agent.x_corebox.harness",
                code="unsupported_or_invalid_configuration",
            )
        return str(harness)
    if extension.get("model_provider") is not None or session_provider:
        return "builtin"
    if default_provider and config.get("model") != "scripted":
        return "builtin"
    return "scripted"


def check_installed(harness: str, offered: Callable[[str], bool]) -> None:
    """Refuse a CLI harness that no connected Runtime offers (its CLI is missing, or at a
    version the adapter does not know), naming what to install."""
    install = CLI_HARNESSES.get(harness)
    if install is not None and not offered(harness):
        raise InvalidRequest(
            f"The {harness} harness is not available: no connected Runtime has its CLI "
            f"at a version corebox knows. Install {install}, then restart corebox; "
            "GET /core/v1/harnesses lists the harnesses that can run.",
            "agent.x_corebox.harness",
            code="unsupported_or_invalid_configuration",
        )


def check_trusted(harness: str, trusted: bool) -> None:
    """Refuse a CLI harness to a project the owner has not trusted: the CLI runs its own
    tools outside corebox's command sandbox, where they reach whatever the server's user
    can (the data directory and its keys among them), and an approval comes from the
    project's own key, so only the owner's trust can stand between them."""
    if harness in CLI_HARNESSES and not trusted:
        raise InvalidRequest(
            f"The {harness} harness runs its tools outside corebox's command sandbox, so"
            " only a project the server's owner trusts may use it (corebox projects"
            " trust PROJECT).",
            "agent.x_corebox.harness",
            code="unsupported_or_invalid_configuration",
        )


def session_agent(agent_id: str, config: dict[str, Any]) -> dict[str, Any]:
    """The agent as a session shows it: no metadata or timestamps."""
    view = {"id": agent_id}
    for key in (
        "model",
        "instructions",
        "name",
        "multi_agent",
        "reasoning",
        "service_tier",
        "text",
        "tools",
        "compaction",
        "experimental",
    ):
        view[key] = config.get(key, defaults()[key])
    return view

"""Agent configuration: defaults, normalisation and harness resolution."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from allinone.core import tools as tool_lists
from allinone.core.api.errors import invalid
from allinone.core.api.models import AgentCreate, AgentUpdate, SessionAgentParam

HARNESSES = ("scripted",)
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
        raise invalid(f"{param} may have at most {MAX_METADATA_KEYS} keys.", param)
    for key, value in metadata.items():
        if len(key) > 64:
            raise invalid("Metadata keys may be at most 64 characters.", f"{param}.{key}")
        if len(value) > 512:
            raise invalid("Metadata values may be at most 512 characters.", f"{param}.{key}")
    return dict(metadata)


def normalize_tools(
    tools: list[Any] | None, param: str = "tools", *, session: bool = True
) -> list[Any]:
    """Validate a tool list and return its stored shape (see `allinone.core.tools`)."""
    return tool_lists.normalize(tools, param, session=session)


def apply_fields(
    config: dict[str, Any], body: AgentCreate | AgentUpdate | SessionAgentParam
) -> None:
    """Copy the fields the body sets onto `config` (omitted keeps, null resets)."""
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
        config["tools"] = normalize_tools(body.tools, session=isinstance(body, SessionAgentParam))
    if body.x_corebox is not UNSET:
        config["x_corebox"] = dict(body.x_corebox)


def from_create(body: AgentCreate) -> dict[str, Any]:
    config = defaults()
    apply_fields(config, body)
    if body.name is not UNSET:
        config["name"] = body.name
    if body.metadata is not UNSET:
        config["metadata"] = check_metadata(body.metadata)
    return config


def harness_for(config: dict[str, Any]) -> str:
    """The harness a session runs on. `scripted` is the deployment default while no model
    provider is configured."""
    extension = config.get("x_corebox") or {}
    harness = extension.get("harness")
    if harness is not None:
        if harness not in HARNESSES:
            raise invalid(
                f"Unknown harness {str(harness)[:40]!r}.",
                "agent.x_corebox.harness",
                code="unsupported_or_invalid_configuration",
            )
        return str(harness)
    return "scripted"


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

"""Returned shapes of saved agents (and the agent configuration automations carry).

Built from stored configuration with `agent(row)` / `agent_config(config)`; converting
through these Structs checks every stored field on the way out.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

import msgspec

from allinone.core.agents import defaults
from allinone.core.shapes.showing import shown
from allinone.core.shapes.tool_models import ToolResource

S = TypeVar("S", bound=msgspec.Struct)

ServiceTier = Literal["auto", "default", "flex", "priority", "fast", "ultrafast"]


class MultiAgent(msgspec.Struct):
    enabled: bool
    max_concurrent_subagents: int | None


class Reasoning(msgspec.Struct):
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None
    summary: Literal["concise", "detailed", "auto"] | None


class TextFormatText(msgspec.Struct, tag="text", tag_field="type"):
    pass


class TextFormatJsonSchema(msgspec.Struct, tag="json_schema", tag_field="type"):
    schema: dict[str, Any]


class Text(msgspec.Struct):
    format: TextFormatText | TextFormatJsonSchema
    verbosity: Literal["low", "medium", "high"]


class Compaction(msgspec.Struct):
    async_: bool = msgspec.field(name="async")


class Experimental(msgspec.Struct):
    time_awareness: bool


class AgentExtension(msgspec.Struct):
    """corebox extension of an agent: its current (latest) version number."""

    version: int


class Agent(msgspec.Struct):
    id: str
    created_at: int
    updated_at: int
    model: str
    name: str | None
    instructions: str | None
    metadata: dict[str, str]
    multi_agent: MultiAgent
    reasoning: Reasoning
    service_tier: ServiceTier
    text: Text
    tools: list[ToolResource]
    compaction: Compaction | None
    experimental: Experimental | None
    x_corebox: AgentExtension
    object: Literal["agent"] = "agent"


class AgentDeleted(msgspec.Struct):
    id: str
    deleted: bool = True
    object: Literal["agent.deleted"] = "agent.deleted"


class AutomationAgentConfig(msgspec.Struct):
    """A session agent's configuration without `id` or `name` (automation targets)."""

    model: str
    instructions: str | None
    multi_agent: MultiAgent
    reasoning: Reasoning
    service_tier: ServiceTier
    text: Text
    tools: list[ToolResource]
    compaction: Compaction | None
    experimental: Experimental | None


_CONFIG_FIELDS = (
    "model",
    "name",
    "instructions",
    "metadata",
    "multi_agent",
    "reasoning",
    "service_tier",
    "text",
    "tools",
    "compaction",
    "experimental",
)


def agent(row: dict[str, Any]) -> Agent:
    """The Agent resource of a stored row; total: a stored field the shape cannot show
    (written by an older build, or by hand) is shown as its default instead of failing
    every read of the project's agents."""
    config = row["config"]
    body = {key: config.get(key) for key in _CONFIG_FIELDS}
    body.update(id=row["id"], created_at=row["created_at"], updated_at=row["updated_at"])
    body["x_corebox"] = {"version": row.get("version") or 1}
    return _convert(body, Agent)


def agent_config(config: dict[str, Any]) -> AutomationAgentConfig:
    body = {key: config.get(key) for key in _CONFIG_FIELDS if key not in ("name", "metadata")}
    return _convert(body, AutomationAgentConfig)


def showable_config(config: dict[str, Any]) -> dict[str, Any]:
    """`config` as `agent_config` shows it, as builtins (for shapes that embed it)."""
    builtins: dict[str, Any] = msgspec.to_builtins(agent_config(config))
    return builtins


def _convert(body: dict[str, Any], type_: type[S]) -> S:
    return shown(body, type_, defaults(), {"tools": ToolResource})

"""Admission against the capability matrix (runtime/proto/matrix.py, seed 003).

`needed` lists the public features a new session uses, each with the request parameter
that asks for it. `check` looks them up in the matrix row of the session's harness and
model protocol: a feature labelled `unsupported` refuses the request with a 400
`unsupported_or_invalid_configuration` naming the parameter, before anything is written;
every feature labelled `degraded`, `emulated` or `lossy` becomes a note that the session
keeps and shows (`x_corebox.capability_notes`), so no conversion is silent.
"""

from __future__ import annotations

from typing import Any

from allinone.core.errors import InvalidRequest
from runtime.proto import matrix

UNSUPPORTED = "unsupported_or_invalid_configuration"


def needed(
    agent: dict[str, Any], environment: dict[str, Any], messages: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """(feature, parameter) for every matrix feature the session asks for."""
    found: list[tuple[str, str]] = []
    tools = agent.get("tools") or []
    for index, tool in enumerate(tools):
        kind = tool.get("type")
        where = f"agent.tools[{index}]"
        if kind == "function":
            found.append(("function_tools", where))
            if tool.get("defer_loading"):
                found.append(("tool_search", f"{where}.defer_loading"))
        elif kind == "mcp":
            transport = (tool.get("transport") or {}).get("type")
            feature = "mcp_http_tools" if transport == "http" else "mcp_stdio_tools"
            found.append((feature, f"{where}.transport"))
        elif kind == "web_search" and tool.get("mode") != "disabled":
            found.append(("web_search", where))
        elif kind == "computer_use":
            found.append(("computer_use", where))
        elif kind == "tool_search":
            found.append(("tool_search", where))
        elif kind == "programmatic_tool_calling" and tool.get("enabled", True):
            found.append(("programmatic_tool_calling", where))
        elif kind == "automations":
            found.append(("automations", where))
    text = agent.get("text") or {}
    if ((text.get("format") or {}).get("type")) == "json_schema":
        found.append(("structured_output", "agent.text.format"))
    if text.get("verbosity") not in (None, "medium"):
        found.append(("text_verbosity", "agent.text.verbosity"))
    if (agent.get("reasoning") or {}).get("effort") is not None:
        found.append(("reasoning_effort", "agent.reasoning.effort"))
    if (agent.get("multi_agent") or {}).get("enabled"):
        found.append(("subagents", "agent.multi_agent.enabled"))
    if agent.get("service_tier") not in (None, "auto"):
        found.append(("service_tier", "agent.service_tier"))
    if environment.get("type") not in (None, "none"):
        found.append(("workspace_tools", "environment.type"))
    for index, message in enumerate(messages):
        if any(part.get("type") == "input_image" for part in message.get("content") or []):
            found.append(("message_images", f"input[{index}].content"))
            break
    unique: dict[str, str] = {}
    for feature, param in found:
        unique.setdefault(feature, param)  # the first parameter that asks for it
    return list(unique.items())


def check(harness: str, protocol: str, wanted: list[tuple[str, str]]) -> list[dict[str, str]]:
    """Refuse a feature the profile does not support; return the notes to keep."""
    try:
        row = matrix.profile(harness, protocol)
    except matrix.UnknownProfile as exc:
        raise InvalidRequest(
            f"No capability profile for {harness} over {protocol}.", code=UNSUPPORTED
        ) from exc
    names = [feature for feature, _ in wanted]
    params = dict(wanted)
    for feature in matrix.refused(row, names):
        raise InvalidRequest(
            f"The {harness} harness cannot provide {feature}, needed because "
            f"{matrix.FEATURES[feature]}: {row[feature].note}.",
            params[feature],
            code=UNSUPPORTED,
        )
    return [
        {"feature": name, "support": row[name].support.value, "note": row[name].note}
        for name in matrix.flagged(row, names)
    ]


def protocol_of(harness: str, provider: dict[str, Any] | None) -> str:
    """The matrix protocol column of a session: the provider's protocol, or `scripted`."""
    if harness == "scripted":
        return "scripted"
    if harness == "claude_code":
        return "anthropic_messages"
    return str((provider or {}).get("protocol") or "chat_completions")

"""Pure mappings from a session to what the wire needs: the capabilities a device must
declare to run its turns (seed 000 admission table), and the `execution_prepare`
configuration. No I/O: a connection is read only for its latest declaration.
"""

from __future__ import annotations

from typing import Any

from allinone.core.gateway.connection import Connection
from allinone.core.gateway.workspace import wire_uuid
from allinone.core.orchestration.credentials import Resolved
from runtime.proto import execution as wire_exec
from runtime.proto.capabilities import ALWAYS_REQUIRED, missing_capabilities


def still_declared(connection: Connection, session: dict[str, Any]) -> bool:
    """Whether the connection's latest declaration still covers the session's needs."""
    declared = connection.available_kind(session["harness"])
    if connection.closed.is_set() or declared is None:
        return False
    return not missing_capabilities(declared.capabilities, required_capabilities(session))


def required_capabilities(session: dict[str, Any]) -> list[str]:
    """What a device must declare to run this session's turns (seed 000 admission table)."""
    required = list(ALWAYS_REQUIRED)
    environment = session["environment"]["type"]
    if environment == "none":
        required.append("environment_none")
    else:
        required.extend(
            ["local_environment", "workspace_read_preparation", "workspace_output_export"]
        )
    agent = session["agent"]
    if any(tool.get("type") == "function" for tool in agent.get("tools", [])):
        required.append("function_tools")
    servers = [
        tool
        for tool in agent.get("tools", [])
        if tool.get("type") == "mcp" and (tool.get("transport") or {}).get("type") == "http"
    ]
    if servers:
        required.append("mcp_http_tools")
    if any(tool.get("required") for tool in servers):
        required.append("mcp_http_required")
    if any(tool.get("credential_id") for tool in servers):
        required.append("mcp_http_bearer_auth")
    text_format = (agent.get("text") or {}).get("format") or {}
    if text_format.get("type") == "json_schema":
        required.extend(["structured_output", "message_items"])
    if (agent.get("multi_agent") or {}).get("enabled"):
        required.append("subagent_observations")
    else:
        required.append("subagent_control")
    return required


def local_environment(session: dict[str, Any]) -> wire_exec.LocalEnvironment | None:
    environment = session["environment"]
    if environment["type"] == "none":
        return None
    return wire_exec.LocalEnvironment(
        id=wire_uuid(session["environment_id"]),
        type=environment["type"],
        workspace_directory=environment.get("workspace_directory") or "",
    )


def configuration(
    session: dict[str, Any], connection: Connection, resolved: Resolved | None = None
) -> wire_exec.ExecutionConfiguration:
    """The `execution_prepare` configuration; `resolved` carries the secrets and corebox
    settings resolved for this execution (credentials.py)."""
    resolved = resolved or Resolved()
    agent = session["agent"]
    text = agent.get("text") or {}
    text_format = text.get("format") or {}
    output_format = None
    if text_format.get("type") == "json_schema":
        output_format = wire_exec.OutputFormat(
            type="json_schema", schema=text_format.get("schema") or {}
        )
    declared = connection.available_kind(session["harness"])
    observe = bool(declared and declared.capabilities.message_items)
    return wire_exec.ExecutionConfiguration(
        agent_kind=session["harness"],
        agent_options=wire_exec.AgentOptions(
            model=resolved.model or agent["model"],
            system_prompt=agent.get("instructions") or "",
            model_provider=resolved.model_provider,
            harness_config=resolved.harness_config,
        ),
        execution_controls=wire_exec.ExecutionControls(
            web_search="disabled",
            text_verbosity=text.get("verbosity") or "medium",
            disable_programmatic_tool_calling=True,
            output_format=output_format,
            reasoning_effort=(agent.get("reasoning") or {}).get("effort"),
        ),
        observe_messages=observe,
        disable_subagents=not (agent.get("multi_agent") or {}).get("enabled", False),
        disable_execution_environment=session["environment"]["type"] == "none",
        local_environment=local_environment(session),
        function_tools=[
            wire_exec.FunctionTool(
                name=t["name"], description=t.get("description", ""), parameters=t.get("parameters")
            )
            for t in agent.get("tools", [])
            if t.get("type") == "function"
        ],
        mcp_http_servers=resolved.mcp_http_servers,
        agent_session_id=session.get("native_session_id") or "",
        require_existing_native_session=bool(session.get("native_session_id")),
    )

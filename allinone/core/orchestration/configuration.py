"""Pure mappings from a session to what the wire needs: the capabilities a device must
declare to run its turns (seed 000 admission table), and the `execution_prepare`
configuration. No I/O: a connection is read only for its latest declaration.
"""

from __future__ import annotations

from typing import Any

import msgspec

from allinone.core.agents import SESSION_KEYED
from allinone.core.gateway.connection import Connection
from allinone.core.gateway.workspace import wire_uuid
from allinone.core.orchestration.credentials import Resolved
from runtime.proto import execution as wire_exec
from runtime.proto.capabilities import ALWAYS_REQUIRED, missing_capabilities
from runtime.proto.initialization import CapabilitySources, SkillMetadata


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
    if session.get("has_started_turn"):
        # corebox records no native session id: a later turn may land on a new Executor,
        # which must rebuild the session from Core's history (seed 000 admission table).
        required.append("native_session_recovery")
    if (agent.get("multi_agent") or {}).get("enabled"):
        required.append("subagent_observations")
    else:
        required.append("subagent_control")
    return required


def local_environment(session: dict[str, Any]) -> wire_exec.LocalEnvironment | None:
    environment = session["environment"]
    if environment["type"] == "none":
        return None
    skills = [
        SkillMetadata(name=skill["name"], description=skill.get("description") or "")
        for skill in environment.get("skills") or []
    ]
    seed = None
    if session.get("environment_seed_wire_id") and session.get("environment_seed_snapshot"):
        seed = wire_exec.WorkspaceSeed(
            environment_id=session["environment_seed_wire_id"],
            snapshot=session["environment_seed_snapshot"],
        )
    return wire_exec.LocalEnvironment(
        id=wire_uuid(session["environment_id"]),
        type=environment["type"],
        workspace_directory=environment.get("workspace_directory") or "",
        capability_sources=CapabilitySources(skills=skills) if skills else None,
        seed=seed,
    )


def configuration(
    session: dict[str, Any], connection: Connection, resolved: Resolved | None = None
) -> wire_exec.ExecutionConfiguration:
    """The `execution_prepare` configuration; `resolved` carries the secrets and corebox
    settings resolved for this execution (credentials.py)."""
    resolved = resolved or Resolved()
    agent = session["agent"]
    multi_agent = agent.get("multi_agent") or {}
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
        disable_subagents=not multi_agent.get("enabled", False),
        observe_subagent_identities=bool(multi_agent.get("enabled", False)),
        max_concurrent_subagents=int(multi_agent.get("max_concurrent_subagents") or 0)
        if multi_agent.get("enabled")
        else 0,
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
        command_environment=resolved.command_environment,
        # The key under which a CLI harness finds this session's native session again.
        agent_session_id=native_session(session),
        require_existing_native_session=bool(session.get("native_session_id")),
    )


def with_overlays(
    config: wire_exec.ExecutionConfiguration, disabled: dict[str, int], offline: bool
) -> wire_exec.ExecutionConfiguration:
    """`config` with what safety overlays ask of the harness: the tools they disable
    (name or MCP server_label -> overlay version) in `harness_config.disabled_tools`, for
    a structured `tool_disabled` result to a call of one; `harness_config.egress =
    "loopback_only"` (`offline`) for commands run without network."""
    if not disabled and not offline:
        return config
    options = config.agent_options
    harness_config = dict(options.harness_config or {})
    if disabled:
        harness_config["disabled_tools"] = dict(disabled)
    if offline:
        harness_config["egress"] = "loopback_only"
    return msgspec.structs.replace(
        config, agent_options=msgspec.structs.replace(options, harness_config=harness_config)
    )


def native_session(session: dict[str, Any]) -> str:
    """The native session a CLI harness should continue: the one it reported, or, for a
    harness that keys its own by the session (`SESSION_KEYED`), the session's id."""
    native = session.get("native_session_id")
    if native:
        return str(native)
    return str(session["id"]) if session["harness"] in SESSION_KEYED else ""

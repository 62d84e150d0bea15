"""Agent tool lists: strict validation and the stored shape with every default applied.

`normalize(tools, param, session=...)` accepts decoded Structs or plain dicts and returns
JSON-ready dicts in the returned (`ToolResource`) shape: an MCP tool gets
`connection_origin: "service"`, `request_metadata: {}`, `required: false`, an HTTP
transport `headers: {}` and a stdio transport `args: []`, `env_vars: []`; web search gets
`context_size: "medium"` and `mode: "live"`; computer use `include_screenshots: false`;
programmatic tool calling `enabled: true`; a function `defer_loading: false`.

A tool list is also checked as a catalog: function names and MCP `server_label`s are
unique (the model would otherwise see one tool and the last definition would silently
win), names follow the model APIs' pattern `^[A-Za-z0-9_-]{1,64}$` (`ToolName`), and a
function's `parameters` is a JSON object schema (`{}` for none).

Secrets an inline session tool may carry (`authorization` on an HTTP transport, `env`
on a stdio transport) are validated but never kept: they would otherwise be returned
and stored in plain text. Vault credentials (`credential_id`) are the supported way to
give an MCP server a secret.
"""

from __future__ import annotations

from typing import Any

import msgspec

from allinone.core.errors import InvalidRequest
from allinone.core.shapes.tool_models import PersistedToolParam, SessionToolParam, ToolResource

MAX_TOOLS_BYTES = 3 * 1024 * 1024
_encoder = msgspec.json.Encoder()


def normalize(tools: list[Any] | None, param: str = "tools", *, session: bool) -> list[Any]:
    """Validate a tool list and return it in its stored shape; raise a 400 naming the
    offending tool field."""
    if tools is None:
        return []
    target: Any = SessionToolParam if session else PersistedToolParam
    result: list[dict[str, Any]] = []
    for index, tool in enumerate(tools):
        raw = msgspec.to_builtins(tool)
        where = f"{param}[{index}]"
        if not isinstance(raw, dict):
            raise InvalidRequest("A tool must be an object.", where)
        try:
            parsed = msgspec.convert(raw, target)
        except msgspec.ValidationError as exc:
            raise _tool_error(exc, where) from exc
        result.append(_stored(msgspec.to_builtins(parsed)))
    check_catalog(result, param)
    if len(_encoder.encode(result)) > MAX_TOOLS_BYTES:
        raise InvalidRequest("The tool list must fit within 3 MiB of compact JSON.", param)
    return result


def check_catalog(tools: list[dict[str, Any]], param: str = "tools") -> None:
    """Refuse duplicate function names, duplicate MCP labels and function parameters
    that are not an object schema, naming the offending field."""
    seen: dict[tuple[str, str], int] = {}
    for index, tool in enumerate(tools):
        kind = tool["type"]
        if kind not in ("function", "mcp"):
            continue
        field = "name" if kind == "function" else "server_label"
        key = (kind, str(tool[field]))
        if key in seen:
            what = "function name" if kind == "function" else "MCP server_label"
            raise InvalidRequest(
                f"Duplicate {what} {key[1]!r} (also tools[{seen[key]}]).",
                f"{param}[{index}].{field}",
            )
        seen[key] = index
        if kind == "function":
            _check_parameters(tool["parameters"], f"{param}[{index}].parameters")


def _check_parameters(schema: dict[str, Any], where: str) -> None:
    if not schema:
        return
    if schema.get("type") != "object":
        raise InvalidRequest("A function's parameters must be a JSON object schema.", where)
    properties = schema.get("properties")
    if properties is not None and not isinstance(properties, dict):
        raise InvalidRequest("parameters.properties must be an object.", f"{where}.properties")
    required = schema.get("required")
    if required is not None and (
        not isinstance(required, list) or not all(isinstance(r, str) for r in required)
    ):
        raise InvalidRequest("parameters.required must be a list of names.", f"{where}.required")


def resources(stored: list[Any]) -> list[ToolResource]:
    """The returned form of a stored tool list."""
    return [msgspec.convert(tool, ToolResource) for tool in stored]


def credential_ids(stored: list[Any]) -> list[tuple[int, str]]:
    """(index, credential_id) of every MCP tool that names a vault credential."""
    found = []
    for index, tool in enumerate(stored):
        if tool.get("type") == "mcp" and tool.get("credential_id"):
            found.append((index, str(tool["credential_id"])))
    return found


def _stored(tool: dict[str, Any]) -> dict[str, Any]:
    kind = tool["type"]
    if kind == "function":
        shaped = {
            "type": "function",
            "name": tool["name"],
            "description": tool["description"],
            "parameters": tool["parameters"],
            "defer_loading": bool(tool.get("defer_loading", False)),
        }
        if "async" in tool:
            shaped["async"] = tool["async"]
        return shaped
    if kind == "programmatic_tool_calling":
        return {"type": kind, "enabled": tool.get("enabled", True)}
    if kind == "mcp":
        return {
            "type": "mcp",
            "server_label": tool["server_label"],
            "transport": _transport(tool["transport"]),
            "allowed_tools": tool.get("allowed_tools"),
            "connection_origin": tool.get("connection_origin") or "service",
            "credential_id": tool.get("credential_id"),
            "request_metadata": tool.get("request_metadata") or {},
            "required": tool.get("required", False),
        }
    if kind == "web_search":
        location = tool.get("location")
        if location is not None:
            location = {k: location.get(k) for k in ("city", "country", "region", "timezone")}
        return {
            "type": "web_search",
            "allowed_domains": tool.get("allowed_domains"),
            "context_size": tool.get("context_size") or "medium",
            "location": location,
            "mode": tool.get("mode") or "live",
        }
    if kind == "computer_use":
        return {"type": kind, "include_screenshots": tool.get("include_screenshots", False)}
    return {"type": kind}


def _transport(transport: dict[str, Any]) -> dict[str, Any]:
    if transport["type"] == "http":
        return {
            "type": "http",
            "server_url": transport["server_url"],
            "headers": transport.get("headers") or {},
        }
    return {
        "type": "stdio",
        "command": transport["command"],
        "cwd": transport["cwd"],
        "args": transport.get("args") or [],
        "env_vars": transport.get("env_vars") or [],
    }


def _tool_error(exc: msgspec.ValidationError, where: str) -> Exception:
    text = str(exc)
    marker = " - at `$"
    if marker in text:
        message, _, path = text.partition(marker)
        suffix = path.rstrip("`")
        param = where + (suffix if suffix.startswith("[") else f".{suffix.lstrip('.')}")
        return InvalidRequest(f"Invalid tool: {message}.", param.rstrip("."))
    return InvalidRequest(f"Invalid tool: {text}.", where)

"""Agent tools on the wire: the request shapes (strict) and the stored/returned shapes.

`PersistedToolParam` is what a saved agent accepts (no secrets in an MCP transport);
`SessionToolParam` is what an inline session or automation agent accepts (an MCP
transport may carry `authorization` or `env`). `ToolResource` is what is returned: every
field present, defaults applied. `allinone.core.tools` turns one into the other.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

_STRICT: dict[str, Any] = {"forbid_unknown_fields": True, "tag_field": "type"}
_TAGGED: dict[str, Any] = {"tag_field": "type"}
# A tool or server name as the model sees it (the Responses API's rule).
ToolName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


class McpHttpTransportParam(msgspec.Struct, tag="http", **_STRICT):
    server_url: str
    headers: dict[str, str] | UnsetType | None = UNSET


class McpStdioTransportParam(msgspec.Struct, tag="stdio", **_STRICT):
    command: str
    cwd: str
    args: list[str] | UnsetType | None = UNSET
    env_vars: list[str] | UnsetType | None = UNSET


class SessionMcpHttpTransportParam(msgspec.Struct, tag="http", **_STRICT):
    server_url: str
    authorization: str | UnsetType | None = UNSET
    headers: dict[str, str] | UnsetType | None = UNSET


class SessionMcpStdioTransportParam(msgspec.Struct, tag="stdio", **_STRICT):
    command: str
    cwd: str
    args: list[str] | UnsetType | None = UNSET
    env: dict[str, str] | UnsetType | None = UNSET
    env_vars: list[str] | UnsetType | None = UNSET


class FunctionToolParam(msgspec.Struct, tag="function", **_STRICT):
    name: ToolName
    description: str
    parameters: dict[str, Any]
    defer_loading: bool | UnsetType = UNSET
    async_: bool | UnsetType = msgspec.field(default=UNSET, name="async")


class ToolSearchToolParam(msgspec.Struct, tag="tool_search", **_STRICT):
    pass


class ProgrammaticToolCallingParam(msgspec.Struct, tag="programmatic_tool_calling", **_STRICT):
    enabled: bool | UnsetType = UNSET


class McpToolParam(msgspec.Struct, tag="mcp", **_STRICT):
    server_label: ToolName
    transport: McpHttpTransportParam | McpStdioTransportParam
    allowed_tools: list[str] | UnsetType | None = UNSET
    connection_origin: Literal["service", "environment"] | UnsetType | None = UNSET
    credential_id: str | UnsetType | None = UNSET
    request_metadata: dict[str, Any] | UnsetType | None = UNSET
    required: bool | UnsetType = UNSET


class SessionMcpToolParam(msgspec.Struct, tag="mcp", **_STRICT):
    server_label: ToolName
    transport: SessionMcpHttpTransportParam | SessionMcpStdioTransportParam
    allowed_tools: list[str] | UnsetType | None = UNSET
    connection_origin: Literal["service", "environment"] | UnsetType | None = UNSET
    credential_id: str | UnsetType | None = UNSET
    request_metadata: dict[str, Any] | UnsetType | None = UNSET
    required: bool | UnsetType = UNSET


class WebSearchLocationParam(msgspec.Struct, forbid_unknown_fields=True):
    city: str | UnsetType | None = UNSET
    country: str | UnsetType | None = UNSET
    region: str | UnsetType | None = UNSET
    timezone: str | UnsetType | None = UNSET


class WebSearchToolParam(msgspec.Struct, tag="web_search", **_STRICT):
    allowed_domains: list[str] | UnsetType | None = UNSET
    context_size: Literal["low", "medium", "high"] | UnsetType | None = UNSET
    location: WebSearchLocationParam | UnsetType | None = UNSET
    mode: Literal["disabled", "cached", "live"] | UnsetType | None = UNSET


class ComputerUseToolParam(msgspec.Struct, tag="computer_use", **_STRICT):
    include_screenshots: bool | UnsetType = UNSET


class AutomationsToolParam(msgspec.Struct, tag="automations", **_STRICT):
    pass


PersistedToolParam = (
    FunctionToolParam
    | ToolSearchToolParam
    | ProgrammaticToolCallingParam
    | McpToolParam
    | WebSearchToolParam
    | ComputerUseToolParam
    | AutomationsToolParam
)
SessionToolParam = (
    FunctionToolParam
    | ToolSearchToolParam
    | ProgrammaticToolCallingParam
    | SessionMcpToolParam
    | WebSearchToolParam
    | ComputerUseToolParam
    | AutomationsToolParam
)


# --- returned shapes -------------------------------------------------------------------


class McpHttpTransport(msgspec.Struct, tag="http", **_TAGGED):
    server_url: str
    headers: dict[str, str]


class McpStdioTransport(msgspec.Struct, tag="stdio", **_TAGGED):
    command: str
    cwd: str
    args: list[str]
    env_vars: list[str]


class FunctionTool(msgspec.Struct, tag="function", **_TAGGED):
    name: str
    description: str
    parameters: dict[str, Any]
    defer_loading: bool
    async_: bool | UnsetType | None = msgspec.field(default=UNSET, name="async")


class ToolSearchTool(msgspec.Struct, tag="tool_search", **_TAGGED):
    pass


class ProgrammaticToolCallingTool(msgspec.Struct, tag="programmatic_tool_calling", **_TAGGED):
    enabled: bool


class McpTool(msgspec.Struct, tag="mcp", **_TAGGED):
    server_label: str
    transport: McpHttpTransport | McpStdioTransport
    allowed_tools: list[str] | None
    connection_origin: Literal["service", "environment"]
    credential_id: str | None
    request_metadata: dict[str, Any]
    required: bool


class WebSearchLocation(msgspec.Struct):
    city: str | None
    country: str | None
    region: str | None
    timezone: str | None


class WebSearchTool(msgspec.Struct, tag="web_search", **_TAGGED):
    allowed_domains: list[str] | None
    context_size: Literal["low", "medium", "high"]
    location: WebSearchLocation | None
    mode: Literal["disabled", "cached", "live"]


class ComputerUseTool(msgspec.Struct, tag="computer_use", **_TAGGED):
    include_screenshots: bool


class AutomationsTool(msgspec.Struct, tag="automations", **_TAGGED):
    pass


ToolResource = (
    FunctionTool
    | ToolSearchTool
    | ProgrammaticToolCallingTool
    | McpTool
    | WebSearchTool
    | ComputerUseTool
    | AutomationsTool
)

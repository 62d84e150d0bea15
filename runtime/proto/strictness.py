"""The decode strictness policy, declared once for each direction.

Core -> Runtime: every payload is decoded with unknown fields rejected at any depth
(`STRICT`). The Runtime acts on what Core asks (it prepares, writes, starts), so a field
it does not understand could change the meaning of the request; refusing it is the only
safe answer, and the seed requires it.

Runtime -> Core: payloads are decoded leniently (`LENIENT`): a Runtime may report more
than this Core reads, and an extra field in a report never changes what Core does with
the fields it knows. The exceptions are the structures whose fields Core acts on as a
closed set, listed in `STRICT_FROM_RUNTIME` with their reason: the capability
declaration (admission is decided from it; the seed rejects unknown capabilities), the
`tool_call` observation (projected into items verbatim) and the token counts (summed into
billing usage).

Every wire Struct is declared with one of these two option sets; the codec's tests walk
both direction tables at every depth and hold each Struct to this policy.
"""

from __future__ import annotations

from typing import Any, Final

STRICT: Final[dict[str, Any]] = {
    "frozen": True,
    "forbid_unknown_fields": True,
    "omit_defaults": True,
}
LENIENT: Final[dict[str, Any]] = {"frozen": True, "omit_defaults": True}

# Struct classes a Runtime sends that Core still decodes strictly, and why.
STRICT_FROM_RUNTIME: Final[dict[str, str]] = {
    "Heartbeat": "admission is decided from the declaration",
    "SupportedAgentKind": "admission is decided from the declaration",
    "AgentKindCapabilities": "the seed rejects unknown capabilities",
    "ToolCall": "projected into items verbatim",
    "ToolObservation": "projected into items verbatim",
    "TokenCounts": "summed into billing usage",
}

"""The harness registry. A declaration is validated completely before the registry
changes: every field must be an explicit boolean (there is no implied base descriptor),
the kind must be a plain name, and capabilities that only make sense together must be
declared together. A rejected registration leaves the registry exactly as it was.

The registry hands out the declaration object it validated; the dispatcher freezes it
for every Executor it admits (see runs.py), so a later change cannot widen what an
admitted Executor may do.
"""

from __future__ import annotations

import re

from runtime.errors import RuntimeFault
from runtime.harness.base import HarnessAdapter
from runtime.proto.capabilities import (
    CAPABILITY_FIELDS,
    AgentKindCapabilities,
    SupportedAgentKind,
)

KIND = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")

# (capability, what it needs): declaring the first without the second is incoherent.
IMPLIES: tuple[tuple[str, str], ...] = (
    ("mcp_http_required", "mcp_http_tools"),
    ("mcp_http_bearer_auth", "mcp_http_tools"),
    ("workspace_read_preparation", "local_environment"),
    ("workspace_output_export", "local_environment"),
    ("structured_output", "message_items"),
    ("function_result_images", "function_tools"),
)


class RegistrationError(RuntimeFault, ValueError):
    pass


def validate_declaration(declaration: object) -> None:
    """Raise RegistrationError unless every field is an explicit boolean and the
    declaration is coherent (IMPLIES)."""
    if not isinstance(declaration, AgentKindCapabilities):
        raise RegistrationError("a declaration must be an AgentKindCapabilities")
    for name in CAPABILITY_FIELDS:
        if not isinstance(getattr(declaration, name, None), bool):
            raise RegistrationError(f"capability {name} is not an explicit boolean")
    for capability, needed in IMPLIES:
        if getattr(declaration, capability) and not getattr(declaration, needed):
            raise RegistrationError(f"capability {capability} needs {needed}")


class HarnessRegistry:
    def __init__(self) -> None:
        self._adapters: dict[str, HarnessAdapter] = {}

    def register(self, adapter: HarnessAdapter) -> None:
        """Add an adapter after validating it completely; raise RegistrationError (and
        change nothing) when the kind, version or declaration is unusable or the kind is
        taken."""
        kind = getattr(adapter, "kind", None)
        if not isinstance(kind, str) or not KIND.match(kind):
            raise RegistrationError("a harness needs a kind: a lowercase name")
        if not isinstance(getattr(adapter, "version", None), str):
            raise RegistrationError(f"harness {kind} needs a version string")
        validate_declaration(getattr(adapter, "declaration", None))
        if not callable(getattr(adapter, "available", None)):
            raise RegistrationError(f"harness {kind} needs an available() check")
        if kind in self._adapters:
            raise RegistrationError(f"harness {kind} is already registered")
        self._adapters[kind] = adapter

    def get(self, kind: str) -> HarnessAdapter | None:
        return self._adapters.get(kind)

    def kinds(self) -> list[str]:
        return list(self._adapters)

    def supported_kinds(self) -> list[SupportedAgentKind]:
        """What the next heartbeat declares: every kind, its availability now, and its
        complete declaration."""
        return [
            SupportedAgentKind(
                kind=a.kind, available=a.available(), capabilities=a.declaration, version=a.version
            )
            for a in self._adapters.values()
        ]

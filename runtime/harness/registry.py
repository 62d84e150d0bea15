"""The harness registry. A declaration is validated completely before the registry
changes: every field must be an explicit boolean (there is no implied base descriptor)."""

from __future__ import annotations

from runtime.harness.base import HarnessAdapter
from runtime.proto.capabilities import (
    CAPABILITY_FIELDS,
    AgentKindCapabilities,
    SupportedAgentKind,
)


class RegistrationError(ValueError):
    pass


def validate_declaration(declaration: AgentKindCapabilities) -> None:
    if not isinstance(declaration, AgentKindCapabilities):
        raise RegistrationError("a declaration must be an AgentKindCapabilities")
    for name in CAPABILITY_FIELDS:
        if not isinstance(getattr(declaration, name), bool):
            raise RegistrationError(f"capability {name} is not an explicit boolean")


class HarnessRegistry:
    def __init__(self) -> None:
        self._adapters: dict[str, HarnessAdapter] = {}

    def register(self, adapter: HarnessAdapter) -> None:
        if not adapter.kind:
            raise RegistrationError("a harness needs a kind")
        validate_declaration(adapter.declaration)
        if adapter.kind in self._adapters:
            raise RegistrationError(f"harness {adapter.kind} is already registered")
        self._adapters[adapter.kind] = adapter

    def get(self, kind: str) -> HarnessAdapter | None:
        return self._adapters.get(kind)

    def supported_kinds(self) -> list[SupportedAgentKind]:
        return [
            SupportedAgentKind(
                kind=a.kind, available=a.available(), capabilities=a.declaration, version=a.version
            )
            for a in self._adapters.values()
        ]

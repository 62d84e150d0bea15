"""The harness registry validates a complete declaration before it changes anything."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from runtime.harness.base import Executor
from runtime.harness.builtin.adapter import BuiltinHarness
from runtime.harness.registry import IMPLIES, HarnessRegistry, RegistrationError
from runtime.harness.scripted import ScriptedHarness
from runtime.proto.capabilities import CAPABILITY_FIELDS, AgentKindCapabilities
from runtime.proto.execution import ExecutionConfiguration

EVERYTHING_OFF = dict.fromkeys(CAPABILITY_FIELDS, False)


class Harness:
    """A minimal adapter whose parts a test can spoil one at a time."""

    def __init__(self, kind: Any = "probe", declaration: Any = None, version: Any = "1") -> None:
        self.kind = kind
        self.version = version
        self.declaration = (
            declaration if declaration is not None else AgentKindCapabilities(**EVERYTHING_OFF)
        )

    def available(self) -> bool:
        return True

    async def create_executor(
        self, executor_id: str, configuration: ExecutionConfiguration
    ) -> Executor:
        raise NotImplementedError


def test_the_production_harnesses_register() -> None:
    registry = HarnessRegistry()
    registry.register(ScriptedHarness())
    registry.register(BuiltinHarness())
    assert registry.kinds() == ["scripted", "builtin"]
    declared = {kind.kind: kind for kind in registry.supported_kinds()}
    assert declared["scripted"].capabilities == ScriptedHarness.declaration
    assert declared["builtin"].available


@pytest.mark.parametrize("field", CAPABILITY_FIELDS)
@pytest.mark.parametrize("value", [None, 0, 1, "true"])
def test_a_field_that_is_not_an_explicit_boolean_is_refused(field: str, value: Any) -> None:
    # Struct construction does not check types; the registry must.
    spoiled = msgspec.structs.replace(AgentKindCapabilities(**EVERYTHING_OFF), **{field: value})
    registry = HarnessRegistry()
    with pytest.raises(RegistrationError, match=field):
        registry.register(Harness(declaration=spoiled))  # type: ignore[arg-type]
    assert registry.kinds() == []


def test_something_other_than_a_declaration_is_refused() -> None:
    registry = HarnessRegistry()
    with pytest.raises(RegistrationError):
        registry.register(Harness(declaration=dict(EVERYTHING_OFF)))  # type: ignore[arg-type]
    assert registry.kinds() == []


@pytest.mark.parametrize(("capability", "needed"), IMPLIES)
def test_an_incoherent_declaration_is_refused(capability: str, needed: str) -> None:
    declaration = AgentKindCapabilities(**{**EVERYTHING_OFF, capability: True})
    registry = HarnessRegistry()
    with pytest.raises(RegistrationError, match=needed):
        registry.register(Harness(declaration=declaration))  # type: ignore[arg-type]
    assert registry.kinds() == []


@pytest.mark.parametrize("kind", ["", "Scripted", "has space", 7, None, "x" * 65])
def test_a_kind_must_be_a_lowercase_name(kind: Any) -> None:
    registry = HarnessRegistry()
    with pytest.raises(RegistrationError):
        registry.register(Harness(kind=kind))  # type: ignore[arg-type]
    assert registry.kinds() == []


def test_a_version_must_be_a_string() -> None:
    with pytest.raises(RegistrationError):
        HarnessRegistry().register(Harness(version=1))  # type: ignore[arg-type]


def test_a_kind_registers_once_and_the_first_stays() -> None:
    registry = HarnessRegistry()
    first = Harness()
    registry.register(first)  # type: ignore[arg-type]
    with pytest.raises(RegistrationError, match="already"):
        registry.register(Harness())  # type: ignore[arg-type]
    assert registry.get("probe") is first

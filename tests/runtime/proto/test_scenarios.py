"""Tier 1: the shared wire scenarios parse, and placeholders bind and match as the
runners on both sides rely on."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.proto import scenarios
from runtime.proto.capabilities import CAPABILITY_FIELDS
from runtime.proto.scenarios import Bindings, CoreFrame, Mismatch, RuntimeFrame, is_placeholder
from runtime.proto.version import VERSION


def _placeholders(value: Any) -> set[str]:
    if is_placeholder(value):
        return {value}
    if isinstance(value, dict):
        return {p for item in value.values() for p in _placeholders(item)}
    if isinstance(value, list):
        return {p for item in value for p in _placeholders(item)}
    return set()


def test_every_scenario_loads_and_has_a_synthetic_value_for_each_placeholder() -> None:
    fixture = scenarios.fixture()
    assert set(fixture.capabilities) == set(CAPABILITY_FIELDS)  # listed one by one
    loaded = scenarios.load_all()
    assert len(loaded) >= 20
    for scenario in loaded:
        for step in scenario.steps:
            if isinstance(step, CoreFrame | RuntimeFrame):
                missing = _placeholders(step.payload) - set(fixture.synthetic)
                assert not missing, (scenario.name, missing)


def test_dial_versions_never_include_the_exact_wire_version() -> None:
    dial = scenarios.load("incompatible_version").steps[0]
    assert isinstance(dial, scenarios.Dial)
    versions = scenarios.dial_versions(dial)
    assert VERSION not in versions and f"{VERSION}-dev" in versions


def test_a_placeholder_binds_to_the_first_non_empty_value_and_must_repeat() -> None:
    bindings = Bindings()
    assert bindings.match({"handle": "$handle"}, {"handle": ""}) != []
    assert bindings.match({"handle": "$handle", "n": 1}, {"handle": "h1", "n": 1}) == []
    assert bindings.values == {"$handle": "h1"}
    assert bindings.match({"handle": "$handle"}, {"handle": "h2"}) != []
    assert bindings.match({"handle": "$handle2"}, {"handle": "h1"}) != []  # distinct values
    assert bindings.substitute({"start": ["$handle"]}) == {"start": ["h1"]}
    with pytest.raises(Mismatch):
        bindings.substitute("$executor")


def test_matching_is_deep_equal_on_type_id_and_payload() -> None:
    step = RuntimeFrame(type="done", id="run", payload={"usage": {"model": "m"}})
    bindings = Bindings()
    bindings.match_frame(step, {"type": "done", "id": "run", "payload": {"usage": {"model": "m"}}})
    for other in (
        {"type": "error", "id": "run", "payload": {"usage": {"model": "m"}}},
        {"type": "done", "id": "run-2", "payload": {"usage": {"model": "m"}}},
        {"type": "done", "id": "run", "payload": {"usage": {"model": "m"}, "extra": 1}},
        {"type": "done", "id": "run", "payload": {"usage": {"model": 1}}},
        {"type": "done", "id": "run", "payload": {}},
    ):
        with pytest.raises(Mismatch):
            bindings.match_frame(step, other)
    assert scenarios.parse_wire('{"type": "done", "id": "run", "trace": "x"}') == {
        "type": "done",
        "id": "run",
        "payload": {},
    }


def test_wire_text_substitutes_bound_values_and_keeps_raw_frames_exact() -> None:
    bindings = Bindings({"$handle": "h1", "$expires_at": 5})
    step = CoreFrame(type="execution_release", id="p", payload={"handle": "$handle"})
    assert json.loads(scenarios.wire_text(step, bindings)) == {
        "type": "execution_release",
        "id": "p",
        "payload": {"handle": "h1"},
    }
    assert scenarios.wire_text(CoreFrame(raw="{not json"), bindings) == "{not json"


def test_a_malformed_scenario_is_refused_with_its_name() -> None:
    with pytest.raises(scenarios.ScenarioError, match="no_such_scenario"):
        scenarios.load("no_such_scenario")

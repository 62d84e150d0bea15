"""Tier 1: `deltas.same` is JSON equality, strict where Python's `==` is loose, at every
depth; an unchanged subtree diffs to no patch and a changed one to the same patch as a
key-by-key walk gives."""

from __future__ import annotations

from typing import Any

import pytest

from storage import deltas
from storage.rows import dumps


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"x": [1]}, {"x": [True]}),
        ({"x": [1]}, {"x": [1.0]}),
        ({"x": {"p": 1, "q": 2}}, {"x": {"q": 2, "p": 1}}),
        ([{"p": 0}], [{"p": False}]),
        ({"x": None}, {"x": {}}),
        ({"x": {"n": 1}}, {"x": {"n": 1.0}}),
        ({"x": 0, "y": "s"}, {"x": False, "y": "s"}),
        ({"x": 1}, {"x": 1, "y": None}),
    ],
)
def test_values_python_calls_equal_are_not_the_same_json(a: Any, b: Any) -> None:
    assert not deltas.same(a, b)  # whatever Python's == says, they differ on the wire
    assert dumps(deltas.apply(a, deltas.diff(a, b))) == dumps(b)


def test_equal_json_is_the_same_and_diffs_to_nothing() -> None:
    a = {"s": {"agent": {"tools": [{"type": "x", "n": 1.5}], "on": True}, "m": {}}}
    b = {"s": {"agent": {"tools": [{"type": "x", "n": 1.5}], "on": True}, "m": {}}}
    assert deltas.same(a, b)
    assert deltas.diff(a, b) == {}


def test_a_change_deep_inside_an_object_patches_only_that_key() -> None:
    a = {"s": {"agent": {"tools": [], "on": True}, "at": 1}}
    b = {"s": {"agent": {"tools": [], "on": True}, "at": 2}}
    assert deltas.diff(a, b) == {"c": {"s": {"c": {"at": [2]}}}}

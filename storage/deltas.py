"""Structural deltas between JSON values: what changed, not the whole value. Pure.

`apply(base, diff(base, new))` rebuilds a value equal to `new` in every respect that
reaches the wire: object key order, and the JSON type of every scalar (`true` is never
`1`, `1` is never `1.0`). A patch is one of:
- `[value]`: replace with `value` (a one-element array; arrays are always replaced
  whole);
- `{"c": {key: patch, ...}, "r": [key, ...], "k": [key, ...]}`: an object patched key
  by key; `c` holds the changed or added keys. The new key order is, by default, the
  base's keys less those listed in `r`, then the added keys in the order `c` lists them;
  `k` gives the whole order instead when that default is wrong. Every part may be
  absent; `{}` means unchanged.
"""

from __future__ import annotations

from typing import Any

import msgspec

UNCHANGED: dict[str, Any] = {}
# Marks a key the base does not have (a value no JSON document holds).
_ABSENT = object()
_encode = msgspec.json.Encoder().encode


def same(a: Any, b: Any) -> bool:
    """JSON equality that tells booleans, integers and floats apart and respects key order."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (dict, list)):
        # Python's `==` is looser (1 == 1.0 == True, key order ignored), so it only rules
        # out; equal values are then told apart by their JSON text, which keeps the JSON
        # type of every scalar and the order of every key. Both run in C.
        return bool(a == b) and _encode(a) == _encode(b)
    return bool(a == b)


def diff(base: Any, new: Any) -> Any:
    """The patch that turns `base` into `new` (`{}` when they are the same)."""
    if type(base) is dict and type(new) is dict:
        if same(base, new):
            return UNCHANGED  # an unchanged subtree is not walked key by key
        return _diff_object(base, new)
    return UNCHANGED if same(base, new) else [new]


def _diff_object(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for key, value in new.items():
        old = base.get(key, _ABSENT)
        if old is value:
            continue
        kind = type(value)
        if kind is not type(old):  # an added key too: nothing is of the sentinel's type
            changes[key] = [value]
        elif kind is dict:
            # `diff` for two objects, inline: this loop runs once per key of every event.
            if not (old == value and _encode(old) == _encode(value)):
                child = _diff_object(old, value)
                if child:
                    changes[key] = child
        elif kind is list:
            if not (old == value and _encode(old) == _encode(value)):
                changes[key] = [value]
        elif old != value:  # scalars of one type: `same` is `==`
            changes[key] = [value]
    patch: dict[str, Any] = {}
    if changes:
        patch["c"] = changes
    order = list(new)
    if list(base) != order:
        removed = [key for key in base if key not in new]
        kept = [key for key in base if key in new]
        if kept + [key for key in order if key not in base] != order:
            patch["k"] = order
        elif removed:
            patch["r"] = removed
    return patch


def apply(base: Any, patch: Any) -> Any:
    """The value `patch` describes relative to `base`. `base` is never modified; the
    result may share unchanged parts with it."""
    if isinstance(patch, list):
        return patch[0]
    if not patch:
        return base
    changes: dict[str, Any] = patch.get("c", {})
    source: dict[str, Any] = base if isinstance(base, dict) else {}
    keys: list[str] | None = patch.get("k")
    if keys is None:
        removed = set(patch.get("r", ()))
        keys = [key for key in source if key not in removed]
        keys += [key for key in changes if key not in source]
    return {
        key: apply(source.get(key), changes[key]) if key in changes else source[key] for key in keys
    }

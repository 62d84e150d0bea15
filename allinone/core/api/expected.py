"""The values a request body's field accepts, for an error that refuses another one.

msgspec names the refused value and where it is (`Invalid value 'x' - at
`$.events[0].type``) but not what would have been accepted. `accepted(type_, param)`
walks `type_`'s structure along `param` (a JSON path such as `events[0].type`) and
returns the values allowed there when they are a closed set: a `Literal`'s values, an
enum's, or, for the tag field of a tagged union, every member's tag. Pure; it runs only
when a request is refused.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import msgspec
from msgspec import inspect

# `events[0].type` -> "events", 0, "type".
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_ITEMS = (inspect.ListType, inspect.SetType, inspect.FrozenSetType, inspect.VarTupleType)


def accepted(type_: Any, param: str) -> list[Any] | None:
    """The closed set of values `param` accepts in a body decoded as `type_` (None when
    the path leads to no such set). A union's members come in order; msgspec keeps a
    `Literal`'s values sorted."""
    try:
        found = _walk([_described(type_)], param)
    except (TypeError, ValueError):  # a type msgspec cannot describe
        return None
    return found or None


@functools.lru_cache(maxsize=64)
def _described(type_: Any) -> inspect.Type:
    """`type_` as `msgspec.inspect` describes it, made once per type: describing a large
    body's type takes milliseconds, and a refused request must stay cheap."""
    return inspect.type_info(type_)


def _walk(types: list[inspect.Type], param: str) -> list[Any]:
    tags: list[Any] = []
    for match in _STEP.finditer(param):
        name, _ = match.groups()
        here = _members(types)
        if name is None:  # an index: the items of an array
            types, tags = [t.item_type for t in here if isinstance(t, _ITEMS)], []
            continue
        tags = [t.tag for t in here if isinstance(t, inspect.StructType) and t.tag_field == name]
        types = [field.type for t in here for field in _fields(t) if field.encode_name == name]
        types += [t.value_type for t in here if isinstance(t, inspect.DictType)]
    return tags or _values(_members(types))


def _members(types: list[inspect.Type]) -> list[inspect.Type]:
    """`types` with every union spread into its members and constraints taken off."""
    found: list[inspect.Type] = []
    for t in types:
        while isinstance(t, inspect.Metadata):
            t = t.type
        if isinstance(t, inspect.UnionType):
            found.extend(_members(list(t.types)))
        else:
            found.append(t)
    return found


def _fields(t: inspect.Type) -> tuple[inspect.Field, ...]:
    if isinstance(t, (inspect.StructType, inspect.TypedDictType, inspect.DataclassType)):
        return t.fields
    return ()


def _values(types: list[inspect.Type]) -> list[Any]:
    values: list[Any] = []
    for t in types:
        if isinstance(t, inspect.LiteralType):
            values.extend(t.values)
        elif isinstance(t, inspect.EnumType):
            values.extend(member.value for member in t.cls)
        elif isinstance(t, inspect.NoneType):
            values.append(None)
        else:
            return []  # an open type (a string, a number, ...) accepts more than a list
    return values


def listed(values: list[Any], limit: int = 12) -> str:
    """`values` as an error message lists them: a string in single quotes as msgspec
    quotes the refused value, anything else as JSON; at most `limit` of them."""
    shown = [f"'{v}'" if isinstance(v, str) else msgspec.json.encode(v).decode() for v in values]
    if len(shown) == 1:
        return shown[0]
    more = ", ..." if len(shown) > limit else ""
    return f"one of {', '.join(shown[:limit])}{more}"

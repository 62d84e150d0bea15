"""What a request body's type accepts, for an error that refuses something else.

msgspec names the refused value or field and where it is (`Invalid value 'x' - at
`$.events[0].type``) but not what would have been accepted. These functions walk the
type's structure along a JSON path such as `events[0].type`. Given the refused `body`,
a tagged union is narrowed to the member whose tag the body names there, so that
`events[0].response` is read as the response of the event type the body sent; without
it (or where the body names no member's tag) every member counts:

- `accepted(type_, param)` returns the values allowed there when they are a closed set:
  a `Literal`'s values, an enum's, or, for the tag field of a tagged union, every
  member's tag;
- `nearest_field(type_, at, name)` returns the known field of the object at `at` whose
  name is nearest to the unknown `name`, when one is near enough to be a misspelling, or
  the field one level up that flattens the two names (`agent.id` for `agent_id`);
- `misplaced_field(type_, at, name)` returns the field beside which `name` belongs when
  it is a field one level up and not here (`agent.input` belongs beside `agent`).

Pure; they run only when a request is refused.
"""

from __future__ import annotations

import difflib
import functools
import re
from typing import Any

import msgspec
from msgspec import inspect

# `events[0].type` -> "events", 0, "type".
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_ITEMS = (inspect.ListType, inspect.SetType, inspect.FrozenSetType, inspect.VarTupleType)
# How alike (difflib's ratio, at its own default) a known field's name must be to be
# offered for an unknown one: `instruction` -> `instructions` (0.96), `modle` -> `model`
# (0.8) and `meta` -> `metadata` (0.67) are offered; `name` -> `type` (0.25) is not.
_NEAR = 0.6


def accepted(type_: Any, param: str, body: Any = None) -> list[Any] | None:
    """The closed set of values `param` accepts in a body decoded as `type_` (None when
    the path leads to no such set). A union's members come in order; msgspec keeps a
    `Literal`'s values sorted. A value two members accept is listed once."""
    try:
        types, tags, _ = _follow([_described(type_)], param, body)
    except (TypeError, ValueError):  # a type msgspec cannot describe
        return None
    return list(dict.fromkeys(tags or _values(_members(types)))) or None


def nearest_field(type_: Any, at: str, name: str, body: Any = None) -> str | None:
    """The field of the object at `at` (a JSON path, "" for the body itself) in a body
    decoded as `type_` whose name is nearest to the unknown `name`, or None when no known
    name is near. Where a tagged union's members meet, the fields of the member the body
    names count, or every member's when it names none.

    When none is near and the object at `at` is the field `p` of an object that also has
    a field `p_name`, that field's path is returned: `{"agent": {"id": ...}}` is a guess
    at `agent_id`, the way a body refers to a saved object beside defining one inline."""
    known = _known(at, type_, body)
    if name in known:  # another member's field: no spelling of it is nearer
        return None
    near = difflib.get_close_matches(name, sorted(known), n=1, cutoff=_NEAR)
    if near:
        return near[0]
    up = _up(at)
    if up is None or f"{up[1]}_{name}" not in _known(up[0], type_, body):
        return None
    return f"{up[0]}.{up[1]}_{name}" if up[0] else f"{up[1]}_{name}"


def misplaced_field(type_: Any, at: str, name: str, body: Any = None) -> str | None:
    """The field `p` beside which the unknown `name` belongs: when the object at `at` is
    the field `p` of an object that has a field `name`, and the object at `at` has none.
    `{"agent": {"input": ...}}` is `input` put one level too deep."""
    up = _up(at)
    if up is None or name in _known(at, type_, body) or name not in _known(up[0], type_, body):
        return None
    return up[1]


def _up(at: str) -> tuple[str, str] | None:
    """`at` as the path of the object it is a field of, and that field's name; None
    for the body itself or an array's item, which is no object's field."""
    parent, _, last = at.rpartition(".")
    step = _STEP.fullmatch(last)
    return (parent, last) if step and step.group(1) else None


def _known(at: str, type_: Any, body: Any) -> set[str]:
    """The names of the fields the object at `at` may have (none when msgspec cannot
    describe `type_`)."""
    try:
        types, _, node = _follow([_described(type_)], at, body)
    except (TypeError, ValueError):
        return set()
    return {field.encode_name for t in _narrowed(_members(types), node) for field in _fields(t)}


@functools.lru_cache(maxsize=64)
def _described(type_: Any) -> inspect.Type:
    """`type_` as `msgspec.inspect` describes it, made once per type: describing a large
    body's type takes milliseconds, and a refused request must stay cheap."""
    return inspect.type_info(type_)


def _follow(
    types: list[inspect.Type], param: str, body: Any
) -> tuple[list[inspect.Type], list[Any], Any]:
    """The types found at `param`, when its last step is a tagged union's tag field the
    union's tags, and the part of `body` found at `param` (None when there is none)."""
    tags: list[Any] = []
    for match in _STEP.finditer(param):
        name, index = match.groups()
        here = _narrowed(_members(types), body)
        if name is None:  # an index: the items of an array
            types, tags = [t.item_type for t in here if isinstance(t, _ITEMS)], []
            position = int(index)
            body = body[position] if isinstance(body, list) and position < len(body) else None
            continue
        tags = [t.tag for t in here if isinstance(t, inspect.StructType) and t.tag_field == name]
        types = [field.type for t in here for field in _fields(t) if field.encode_name == name]
        types += [t.value_type for t in here if isinstance(t, inspect.DictType)]
        body = body.get(name) if isinstance(body, dict) else None
    return types, tags, body


def _narrowed(members: list[inspect.Type], node: Any) -> list[inspect.Type]:
    """`members` less the tagged structs whose tag the object `node` does not name,
    when it names one of theirs (as msgspec decodes a tagged union); all of them
    otherwise."""
    if not isinstance(node, dict):
        return members
    tagged = [t for t in members if isinstance(t, inspect.StructType) and t.tag_field in node]
    named = [t for t in tagged if node[t.tag_field] == t.tag]
    return [t for t in members if t in named or t not in tagged] if named else members


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

"""Resources built from stored rows, totally.

`shown(body, type_, defaults)` converts a stored body into its resource type; a field
the type cannot hold or that is missing (written by an older build, or by hand) is
shown as its default, and a list keeps the elements that convert, so one stored value
can never fail every read of a list. Each repair is logged (the field path only, never
the value).
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

import msgspec

log = logging.getLogger(__name__)
S = TypeVar("S", bound=msgspec.Struct)


def shown(
    body: dict[str, Any],
    type_: type[S],
    defaults: dict[str, Any],
    elements: dict[str, Any] | None = None,
) -> S:
    """`body` as `type_`; fields named in `defaults` that do not convert are repaired
    (lists named in `elements` keep their elements of that type, others take the
    default). Fields without a default must convert."""
    try:
        return msgspec.convert(body, type_)
    except msgspec.ValidationError as exc:
        log.warning("stored %s repaired for display: %s", type_.__name__, _where(exc))
    fixed = dict(body)
    for field in msgspec.structs.fields(type_):
        name = field.encode_name
        value = fixed.get(name)
        if name not in defaults or (name in fixed and fits(value, field.type)):
            continue
        element = (elements or {}).get(name)
        if element is not None and isinstance(value, list):
            fixed[name] = [item for item in value if fits(item, element)]
        else:
            fixed[name] = defaults[name]
    return msgspec.convert(fixed, type_)


def fits(value: Any, type_: Any) -> bool:
    try:
        msgspec.convert(value, type_)
    except msgspec.ValidationError:
        return False
    return True


def _where(exc: msgspec.ValidationError) -> str:
    text = str(exc)
    return text[text.rfind(" - at ") + 6 :] if " - at " in text else "?"

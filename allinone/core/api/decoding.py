"""The edge decode step: request bytes in, a typed and bounded structure out.

`decode_json(body, type_)` is the only way a JSON request body becomes a value a handler
may act on (a handler whose body is a union decodes a `dict`, then `convert`s it, the
same last step). It refuses, with a 400 in the API's error format and before any handler
code runs:

- bytes that are not JSON or not UTF-8 (`invalid_json`);
- a top-level value that is not an object;
- an object that repeats a key (JSON parsers disagree on which copy wins, so the
  request's meaning would depend on who reads it);
- nesting deeper than `MAX_DEPTH` arrays and objects;
- integers outside the signed 64-bit range SQLite stores (anywhere in the body,
  including free-form objects such as a JSON schema or metadata);
- anything `type_` does not accept (unknown, missing or mistyped fields, out-of-range
  values), naming the offending parameter.

Reading the bytes, and limiting how many are read, happen before this step and are
not its concern. The function is pure: no I/O, no clock.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar

import msgspec

from allinone.core.api.errors import from_validation, invalid, not_json

T = TypeVar("T")

MAX_DEPTH = 64
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def decode_json(body: bytes, type_: type[T]) -> T:
    """Decode `body` (empty means `{}`) into `type_`, or raise the 400 described in the
    module docstring. Nothing the caller does with the result can meet a value the
    storage layer cannot hold or a nesting the renderers cannot walk."""
    if not body.strip():
        body = b"{}"
    try:
        value = msgspec.json.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise not_json() from exc
    if not isinstance(value, dict):
        raise invalid("The request body must be a JSON object.")
    check_bounds(value)
    check_unique_keys(body)
    decoded: T = convert(value, type_)
    return decoded


def convert(value: Any, type_: Any) -> Any:
    """`value` (a JSON object `decode_json` read and checked) as `type_`, which may be a
    union a `type[T]` cannot name; or a 400 naming the parameter and, when it takes only
    a few values, those."""
    try:
        return msgspec.convert(value, type_)
    except msgspec.ValidationError as exc:
        raise from_validation(exc, type_, value) from exc


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, item in pairs:
        if key in found:
            raise _RepeatedKey(key)
        found[key] = item
    return found


def check_unique_keys(body: bytes) -> None:
    """Raise a 400 naming the key when any object in `body` (JSON already decoded and
    bounded by the caller, so the parse here cannot fail or recurse too deep) repeats a
    key."""
    try:
        json.loads(body, object_pairs_hook=_pairs)
    except _RepeatedKey as exc:
        raise invalid(f"The request body repeats the key {exc.key[:64]!r}.", exc.key[:64]) from exc
    except (ValueError, RecursionError):
        return  # msgspec, the stricter parser, already accepted the body


def check_bounds(value: Any, *, max_depth: int = MAX_DEPTH) -> None:
    """Raise a 400 when `value` (decoded JSON) nests deeper than `max_depth` or holds an
    integer outside the signed 64-bit range. Iterative, so any depth is safe to check."""
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        current, depth, path = stack.pop()
        if depth > max_depth:
            raise invalid(
                f"The request body nests deeper than {max_depth} levels.",
                path or None,
                code="invalid_json",
            )
        if isinstance(current, dict):
            items: Any = current.items()
            fmt = "{0}.{1}" if path else "{1}"
        else:
            items = enumerate(current)
            fmt = "{0}[{1}]"
        for key, item in items:
            if isinstance(item, dict | list):
                stack.append((item, depth + 1, fmt.format(path, key)))
            elif type(item) is int and not INT64_MIN <= item <= INT64_MAX:
                where = fmt.format(path, key)
                raise invalid("Integer out of range (signed 64-bit).", where)


# --- multipart fields of `/v1/files` ----------------------------------------------------

MAX_FILENAME = 255
_FILENAME = msgspec.Meta(min_length=1, max_length=MAX_FILENAME, pattern=r"^[^\x00-\x1f\x7f/\\]+$")


def upload_filename(filename: str | None) -> str:
    """The typed name of an uploaded file part, or a 400 naming the field. A missing
    name is `upload`."""
    try:
        name: str = msgspec.convert(filename or "upload", Annotated[str, _FILENAME])
    except msgspec.ValidationError as exc:
        raise invalid(
            f"The file name must be 1-{MAX_FILENAME} characters without control characters"
            " or slashes.",
            "file",
        ) from exc
    return name

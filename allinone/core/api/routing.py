"""Route matching that does not depend on the order routes are listed in.

A literal path segment always wins over a path parameter at the same place:
`/v1/agents/sessions` is never read as the agent `sessions`, whichever of
`/v1/agents/{agent_id}` and `/v1/agents/sessions` comes first. `literal_first(routes)`
gives each parameterised route the literals its parameters must not take (those of the
other routes that share its path up to that segment); everything else about a route
(endpoint, methods, path as published in `/openapi.json`) is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope


def _segments(path: str) -> list[str]:
    return path.strip("/").split("/")


def _is_param(segment: str) -> bool:
    return segment.startswith("{") and segment.endswith("}")


def _name(segment: str) -> str:
    return segment[1:-1].split(":")[0]


_Shape = tuple[list[str], list[bool]]


def _shape(path: str) -> _Shape:
    """A path's segments, and for each whether it is a parameter."""
    segments = _segments(path)
    return segments, [_is_param(segment) for segment in segments]


class LiteralFirst(Route):
    """A Route whose parameters never take a literal segment another route owns."""

    def __init__(
        self,
        path: str,
        endpoint: Any,
        *,
        methods: Sequence[str] | None,
        name: str | None,
        reserved: dict[str, frozenset[str]],
    ) -> None:
        super().__init__(path, endpoint, methods=methods, name=name)
        self.reserved = reserved

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if match is not Match.NONE:
            params = child.get("path_params", {})
            if any(params.get(name) in words for name, words in self.reserved.items()):
                return Match.NONE, {}
        return match, child


def _written(shape: _Shape) -> tuple[str, ...]:
    """A path's segments with each parameter written `{}` (any parameter matches any)."""
    segments, params = shape
    return tuple(
        "{}" if param else segment for segment, param in zip(segments, params, strict=True)
    )


def _literals_after(shapes: Iterable[_Shape]) -> dict[tuple[str, ...], set[str]]:
    """For every leading run of written segments, the literal segments some path has
    right after it. A parameter at index i of a path is reserved exactly the literals
    after its first i written segments: what comparing the path with every other one
    finds, in one pass over the paths."""
    found: dict[tuple[str, ...], set[str]] = {}
    for shape in shapes:
        written = _written(shape)
        for index, segment in enumerate(shape[0]):
            if not shape[1][index]:
                found.setdefault(written[:index], set()).add(segment)
    return found


def _reserved_from(
    shape: _Shape, after: dict[tuple[str, ...], set[str]]
) -> dict[str, frozenset[str]]:
    written = _written(shape)
    found: dict[str, set[str]] = {}
    for index, segment in enumerate(shape[0]):
        words = after.get(written[:index]) if shape[1][index] else None
        if words:
            found.setdefault(_name(segment), set()).update(words)
    return {name: frozenset(words) for name, words in found.items()}


def literal_first(routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    """`routes` with every parameterised HTTP route made a `LiteralFirst`."""
    shapes = {route.path: _shape(route.path) for route in routes if isinstance(route, Route)}
    after = _literals_after(shapes.values())
    result: list[BaseRoute] = []
    for route in routes:
        if isinstance(route, Route) and "{" in route.path:
            reserved = _reserved_from(shapes[route.path], after)
            if reserved:
                methods = sorted(route.methods) if route.methods is not None else None
                route = LiteralFirst(
                    route.path, route.endpoint, methods=methods, name=route.name, reserved=reserved
                )
        result.append(route)
    return result

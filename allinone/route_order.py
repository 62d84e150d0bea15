"""Route order that does not depend on the order routes are registered in.

Starlette matches routes in list order, so `/v1/agents/{agent_id}` listed before
`/v1/agents/environments` would capture it. `specific_first` moves every route ahead of
the earlier routes that would capture its path, and changes nothing else: routes that do
not overlap keep their registration order (and so the order `/openapi.json` lists them).
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.routing import BaseRoute


def _segments(path: str) -> list[str]:
    return path.strip("/").split("/")


def _is_param(segment: str) -> bool:
    return segment.startswith("{") and segment.endswith("}")


def captures(general: str, specific: str) -> bool:
    """True when `general`, matched first, would take requests meant for `specific`: the
    same number of segments, each a parameter or the same literal, and somewhere a
    parameter in `general` where `specific` has a literal. Parameters match one segment."""
    outer, inner = _segments(general), _segments(specific)
    if len(outer) != len(inner):
        return False
    wider = False
    for mine, theirs in zip(outer, inner, strict=True):
        if _is_param(mine):
            wider = wider or not _is_param(theirs)
        elif mine != theirs:
            return False
    return wider


def specific_first(routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    """`routes` with each one ahead of any route that would capture it."""
    ordered: list[BaseRoute] = []
    for route in routes:
        path = _path(route)
        position = len(ordered)
        for index, earlier in enumerate(ordered):
            other = _path(earlier)
            if path is not None and other is not None and captures(other, path):
                position = index
                break
        ordered.insert(position, route)
    return ordered


def _path(route: BaseRoute) -> str | None:
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return None
    if ":path}" in path:
        raise ValueError(f"{path}: a parameter spanning segments cannot be ordered here")
    return path


__all__ = ["captures", "specific_first"]

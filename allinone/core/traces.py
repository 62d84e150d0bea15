"""Session traces: one OTLP/JSON `ExportTraceServiceRequest` per root turn, built from the
turns table. Pure functions.

Each trace has one resource (service `corebox`, the session id) with one span for the
turn: ids derived from the turn id (so a trace reads the same every time), start and end
from `started_at`/`completed_at` (the creation time while a turn has not started or
ended), and status OK for a completed turn, ERROR (with the public error code and
message) for a failed one, UNSET otherwise. OTLP/JSON encodes trace and span ids as hex
and 64-bit integers as decimal strings.
"""

from __future__ import annotations

import hashlib
from typing import Any

from allinone import __version__
from allinone.core import render

SPAN_KIND_INTERNAL = 1
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2
NANOS = 1_000_000_000


def _hex(seed: str, digits: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:digits]


def _attribute(key: str, value: str | int | None) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": "" if value is None else value}}


def _status(turn: dict[str, Any]) -> dict[str, Any]:
    if turn["status"] == "completed":
        return {"code": STATUS_OK}
    if turn["status"] == "failed":
        error = render.turn(turn)["error"] or {}
        return {"code": STATUS_ERROR, "message": f"{error.get('code')}: {error.get('message')}"}
    return {"code": STATUS_UNSET}


def otlp(turn: dict[str, Any]) -> dict[str, Any]:
    """The ExportTraceServiceRequest for one root turn row."""
    start = turn.get("started_at") or turn["created_at"]
    end = turn.get("completed_at") or start
    usage = turn.get("usage") or {}
    attributes = [
        _attribute("corebox.session.id", turn["session_id"]),
        _attribute("corebox.turn.id", turn["id"]),
        _attribute("corebox.turn.status", turn["status"]),
        _attribute("corebox.agent.id", turn["agent_id"]),
    ]
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        if isinstance(usage.get(key), int):
            attributes.append(_attribute(f"gen_ai.usage.{key}", usage[key]))
    span = {
        "traceId": _hex(f"trace:{turn['id']}", 32),
        "spanId": _hex(f"span:{turn['id']}", 16),
        "parentSpanId": "",
        "name": "agent.session.turn",
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(start * NANOS),
        "endTimeUnixNano": str(end * NANOS),
        "attributes": attributes,
        "status": _status(turn),
    }
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [
                        _attribute("service.name", "corebox"),
                        _attribute("service.version", __version__),
                        _attribute("corebox.session.id", turn["session_id"]),
                    ]
                },
                "scopeSpans": [
                    {"scope": {"name": "corebox", "version": __version__}, "spans": [span]}
                ],
            }
        ]
    }

"""`GET /core/v1/harnesses`: the harness kinds connected Runtimes declare, each with the
declaring devices (availability, version and complete capability declaration) and its
rows of the capability matrix (runtime/proto/matrix.py), one per model protocol.

Core learns kinds only from heartbeats: a kind no connected Runtime declares is not
listed, and nothing is inferred before a Runtime's first heartbeat. A CLI harness
(agents.CLI_HARNESSES) is listed only with the devices that declare it available, that
is, where its CLI is installed at a version the adapter knows; `version` is the CLI's.
The matrix rows are the shared table both sides import. Authorised by the Core key or a
project API key.
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.agents import CLI_HARNESSES
from allinone.core.api.common import json
from allinone.core.gateway.registry import Registry
from runtime.proto import matrix
from storage.database import Database


class HarnessesApi:
    def __init__(self, db: Database, registry: Registry) -> None:
        self._db = db
        self._registry = registry

    def routes(self) -> list[Route]:
        return [Route("/core/v1/harnesses", self.list, methods=["GET"])]

    async def list(self, request: Request) -> Response:
        kinds: dict[str, dict[str, Any]] = {}
        for connection in self._registry:
            if connection.closed.is_set() or connection.kinds is None:
                continue
            for declared in connection.kinds.values():
                if declared.kind in CLI_HARNESSES and not declared.available:
                    continue
                entry = kinds.setdefault(
                    declared.kind,
                    {
                        "object": "x_corebox.harness",
                        "kind": declared.kind,
                        "available": False,
                        "devices": [],
                        "protocols": _profiles(declared.kind),
                    },
                )
                entry["available"] = entry["available"] or declared.available
                entry["devices"].append(
                    {
                        "device_id": connection.device_id,
                        "available": declared.available,
                        "version": declared.version,
                        "capabilities": msgspec.to_builtins(declared.capabilities),
                    }
                )
        data = [kinds[kind] for kind in sorted(kinds)]
        return json({"object": "list", "data": data, "features": matrix.FEATURES})


def _profiles(kind: str) -> dict[str, dict[str, dict[str, str]]]:
    """protocol -> feature -> {support, note}; empty for a kind the matrix does not know."""
    return {
        protocol: {
            name: {"support": value.support.value, "note": value.note}
            for name, value in matrix.profile(kind, protocol).items()
        }
        for protocol in matrix.protocols(kind)
    }

"""The heartbeat (Runtime -> Core, no `id`): liveness plus the complete capability
declaration of every supported agent kind. It proves liveness only; it is never a
receipt for an earlier message.
"""

from __future__ import annotations

import msgspec

from runtime.proto.capabilities import SupportedAgentKind


class Heartbeat(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    ts: int
    active_requests: int
    home_removal: bool
    supported_agent_kinds: list[SupportedAgentKind] = []
    daemon_version: str = ""

"""The heartbeat (Runtime -> Core, no `id`): liveness plus the complete capability
declaration of every supported agent kind. It proves liveness only; it is never a
receipt for an earlier message.

`home_removal` is a corebox flag the seed does not name: a heartbeat shaped exactly as
the seed describes omits it, and it then reads as false.
"""

from __future__ import annotations

import msgspec

from runtime.proto.capabilities import SupportedAgentKind


class Heartbeat(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    ts: int
    active_requests: int
    supported_agent_kinds: list[SupportedAgentKind] = []
    daemon_version: str = ""
    home_removal: bool = False

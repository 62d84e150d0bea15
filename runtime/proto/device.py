"""Device-level requests: `device_shutdown` (Core -> Runtime).

It asks the daemon to stop gracefully: close active and idle Executors, keep targets
whose close failed, and close the connection. The envelope carries no correlation; a
successful send proves only that the frame was queued, never that shutdown completed.
"""

from __future__ import annotations

import msgspec


class DeviceShutdown(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    reason: str = ""  # a short machine tag for logs; never a credential

"""What an `openai_hosted` environment may ask for that this build cannot provide.

One check shared by sessions, standalone environments and automation targets, so a
configuration is refused with `unsupported_or_invalid_configuration` when it is given,
never accepted and then dropped or failed later.
"""

from __future__ import annotations

from typing import Any

from allinone.core.errors import InvalidRequest


def check_supported(body: dict[str, Any], param: str) -> None:
    """Refuse what this build cannot provide: network restrictions, system packages,
    plugins and a desktop (no harness here drives one)."""
    network = body.get("network") or {"access": "enabled"}
    if network.get("access", "enabled") != "enabled":
        raise InvalidRequest(
            "corebox cannot enforce network restrictions; use access 'enabled'.",
            f"{param}.network.access",
            code="unsupported_or_invalid_configuration",
        )
    if (body.get("packages") or {}).get("system"):
        raise InvalidRequest(
            "System packages cannot be installed here.",
            f"{param}.packages.system",
            code="unsupported_or_invalid_configuration",
        )
    if (body.get("desktop") or {}).get("enabled"):
        raise InvalidRequest(
            "A desktop cannot be provided here: no corebox harness can use one.",
            f"{param}.desktop.enabled",
            code="unsupported_or_invalid_configuration",
        )
    if body.get("plugins"):
        raise InvalidRequest(
            "plugins are not supported in this build.",
            f"{param}.plugins",
            code="unsupported_or_invalid_configuration",
        )

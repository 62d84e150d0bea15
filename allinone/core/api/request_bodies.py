"""Request bodies of routes that `operations.OPERATIONS` does not describe in full.

`openapi.document` takes a route's body from here when its operation names none, so the
document says what the devices, communication and upload routes accept (bodies and the
protocol headers). The types are the ones the handlers decode.
"""

from __future__ import annotations

from typing import Any

from allinone.core.api.decoding import MAX_FILENAME
from allinone.core.api.devices import DeviceCreate
from allinone.core.comms import models as comms
from allinone.core.comms.limits import EPOCH_HEADER, PROTOCOL_HEADER, PROTOCOL_VERSION

CONTACT = "/api/v1/contacts/{contact_id}"
ROLE = "/core/v1/comms/roles/{role_id}"

JSON_BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/core/v1/devices"): DeviceCreate,
    ("POST", "/api/v1/contacts"): comms.OpenContact,
    ("POST", CONTACT + "/reply"): comms.Reply,
    ("POST", CONTACT + "/accept"): comms.Accept,
    ("POST", CONTACT + "/close"): comms.Close,
    ("POST", CONTACT + "/claim"): comms.Claim,
    ("POST", CONTACT + "/progress"): comms.Progress,
    ("POST", "/api/v1/communication/receipts"): comms.Receipts,
    ("PUT", "/api/v1/communication/receiver"): comms.ReceiverReport,
    ("POST", "/core/v1/comms/roles"): comms.RoleCreate,
    ("POST", ROLE + "/instances"): comms.InstanceCreate,
    ("POST", ROLE + "/primary"): comms.PrimarySet,
    ("POST", ROLE + "/rotate-stream"): comms.StreamRotate,
}

_SKILL_UPLOAD: dict[str, Any] = {
    "type": "object",
    "properties": {
        "files": {"type": "string", "format": "binary"},
        "files[]": {"type": "array", "items": {"type": "string", "format": "binary"}},
    },
    "description": "One zip in `files`, or a directory's files as `files[]` parts named by"
    " their relative paths; a SKILL.md with `name` and `description` front matter at the"
    " root; at most 5 MiB as uploaded, 20 MiB expanded.",
}

MULTIPART_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/skills"): _SKILL_UPLOAD,
    ("POST", "/v1/skills/{skill_id}/versions"): {
        **_SKILL_UPLOAD,
        "properties": {**_SKILL_UPLOAD["properties"], "default": {"enum": ["true", "false"]}},
    },
    ("POST", "/v1/files"): {
        "type": "object",
        "required": ["file", "purpose"],
        "properties": {
            "file": {"type": "string", "format": "binary", "maxLength": 64 * 1024 * 1024},
            "purpose": {"enum": ["user_data"]},
            "expires_after[anchor]": {"enum": ["created_at"]},
            "expires_after[seconds]": {"type": "integer", "minimum": 3600, "maximum": 2592000},
        },
        "description": f"The file part's name: 1-{MAX_FILENAME} characters, no slashes"
        " or control characters.",
    },
}


def header_parameters(method: str, path: str) -> list[dict[str, Any]]:
    """Headers a route requires besides its credential: the communication routes speak
    one protocol version, and their writes carry the caller's primary epoch."""
    if not path.startswith("/api/v1/") or path.startswith("/api/v1/agent-daemon"):
        return []
    found: list[dict[str, Any]] = [
        {
            "name": PROTOCOL_HEADER,
            "in": "header",
            "required": True,
            "schema": {"enum": [PROTOCOL_VERSION]},
        }
    ]
    if method != "GET":
        found.append(
            {
                "name": EPOCH_HEADER,
                "in": "header",
                "required": True,
                "schema": {"type": "integer", "minimum": 0},
            }
        )
    return found

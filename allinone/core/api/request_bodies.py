"""Request bodies of routes that `operations.OPERATIONS` does not describe in full.

`openapi.document` takes a route's body from here when its operation names none, so the
document says what the devices, communication and upload routes accept. The types are
the ones the handlers decode.
"""

from __future__ import annotations

from typing import Any

from allinone.core.api.bodies import MAX_FILENAME
from allinone.core.api.devices import DeviceCreate
from allinone.core.comms import models as comms

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

MULTIPART_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/files"): {
        "type": "object",
        "required": ["file", "purpose"],
        "properties": {
            "file": {"type": "string", "format": "binary", "maxLength": 64 * 1024 * 1024},
            "purpose": {"enum": ["user_data"]},
        },
        "description": f"The file part's name: 1-{MAX_FILENAME} characters, no slashes"
        " or control characters.",
    },
}

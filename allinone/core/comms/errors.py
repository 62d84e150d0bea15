"""The communication exception tree (drawn in the package docstring). Each error carries
the HTTP status and the protocol's upper-case code; the message never contains a token,
a lease id or message content."""

from __future__ import annotations

from allinone.core.errors import Refused


class CommsError(Refused):
    """The subtree of `allinone.core.errors.Refused` for protocol 1.4: its codes are the
    protocol's upper-case ones and its 409s leave retrying to the client."""

    status = 400
    default_code: str | None = "INVALID_REQUEST"


class Unauthenticated(CommsError):
    status = 401
    default_code = "UNAUTHENTICATED"
    challenge = True


class Forbidden(CommsError):
    status = 403
    default_code = "FORBIDDEN"


class NotFound(CommsError):
    status = 404
    default_code = "NOT_FOUND"


class PreconditionRequired(CommsError):
    status = 428
    default_code = "PRECONDITION_REQUIRED"


class Rejected(CommsError):
    status = 409
    default_code = "CONFLICT"


class IllegalTransition(Rejected):
    default_code = "ILLEGAL_TRANSITION"

    def __init__(self, lifecycle: str, current: str, target: str) -> None:
        super().__init__(f"The {lifecycle} cannot move from {current} to {target}.")
        self.current = current
        self.target = target

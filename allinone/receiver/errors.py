"""The receiver's exception tree (drawn in the package docstring). Messages never carry
a token, a lease id or message content."""

from __future__ import annotations


class ReceiverError(Exception):
    pass


class ConfigError(ReceiverError):
    pass


class LockHeld(ReceiverError):
    pass


class StoreError(ReceiverError):
    pass


class ResolutionError(ReceiverError):
    pass


class RemoteError(ReceiverError):
    pass


class TransportError(RemoteError):
    pass


class PlatformError(RemoteError):
    """The platform refused: `status` is the HTTP status, `code` its upper-case code."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class Halted(ReceiverError):
    """Stop the cycle; `code` says why (PROTOCOL_MISMATCH, ROLE_MISMATCH, SEQ_CONFLICT,
    STREAM_ROLLED_BACK). The cycle records it for `status`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code

"""The Runtime's exception tree.

Every exception the Runtime raises derives from `RuntimeFault`; foreign exceptions
(websockets, OSError, subprocess, a harness's own) are translated once, where they are
met, with `raise ... from exc`. The wire protocol's own tree (`runtime.proto.errors`,
rooted at `ProtocolError`) is shared with Core and stays separate; its finite codes are
what reach a peer.

    RuntimeFault
    ├── Refused                    a request the Runtime does not accept; the dispatcher
    │                              turns it into the one `rejected` status
    ├── TransportError             (runtime.transport) the connection to Core
    │   ├── PermanentError         Core retired this device: stop reconnecting
    │   └── TransientError         reconnect with backoff
    ├── HarnessError               (runtime.harness.base) what an adapter reports
    │   ├── Unsupported            the operation is not declared by the harness
    │   ├── ContractViolation      the harness broke its interface
    │   ├── Unavailable            the native engine cannot be reached
    │   ├── NativeFailure          the native engine failed the Turn
    │   │   ├── RpcError           (harness.codex.rpc) the Codex app-server refused a request
    │   │   └── CursorInvalid      (harness.builtin.cursor) a checkpoint it cannot restore
    │   ├── OutcomeUnknown         the native outcome cannot be confirmed
    │   └── OutputTooLarge         a Run frame past the wire's frame limit, never sent
    ├── ScriptedFailure            (runtime.harness.scripted) a scripted Turn's failure
    ├── RegistrationError          (runtime.harness.registry) also a ValueError
    ├── OutputClosed               (runtime.runs) a Run's output after its `done`
    ├── WorkspaceError             (runtime.workspaces) a workspace path or binding
    ├── SnapshotError              (runtime.snapshots) a workspace snapshot not made or read
    └── ConfinementError           (runtime.confinement) the sandbox could not be set up

    ProtocolError                  (runtime.proto.errors) decode and validation failures
    ├── DecodeError                a frame that does not decode
    ├── FrameTooLarge              a frame past the frame limit: never sent
    ├── UnknownMessageType         a type the direction does not accept
    └── ValidationError            a decoded frame that breaks a seed rule
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.admission import AdmissionRecord


class RuntimeFault(Exception):
    """The root of every exception the Runtime raises."""


class Refused(RuntimeFault):
    """A request the Runtime does not accept, with its finite code. `record` is the
    admission the `rejected` reply names; None when the reply must not name one (there
    is none, or the request named another handle)."""

    def __init__(self, code: str, record: AdmissionRecord | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.record = record

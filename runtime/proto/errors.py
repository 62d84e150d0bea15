"""Finite error codes of the wire protocol and the protocol's exception tree.

    ProtocolError                 a frame or payload that the protocol rejects
    +-- DecodeError               not a valid envelope or payload for its type
    +-- FrameTooLarge             an encoded frame past MAX_FRAME_BYTES: never sent
    +-- UnknownMessageType        a type this direction does not carry
    +-- ValidationError           decoded, but breaks a rule of the seed
        +-- IllegalPreparationTransition   (execution.py)
        +-- IllegalTransferTransition      (transfers.py)
        +-- IllegalInteractionTransition   (interactions.py)

Every ProtocolError carries a finite `code`; its text never echoes field values. The
StrEnums below are the finite code sets of each message family (reply `error_code`
values); a reply carrying a code outside its family's set proves nothing.
"""

from enum import StrEnum


class PreparationErrorCode(StrEnum):
    INVALID_REQUEST = "invalid_request"
    RESOURCE_UNAVAILABLE = "resource_unavailable"
    UNSUPPORTED_PREPARATION = "unsupported_preparation"
    UNSUPPORTED_READ_PREPARATION = "unsupported_read_preparation"
    INVALID_CONFIGURATION = "invalid_configuration"
    UNSUPPORTED_CONFIGURATION = "unsupported_configuration"
    REQUEST_CONFLICT = "request_conflict"
    PREPARATION_CAPACITY = "preparation_capacity"
    SESSION_BINDING_CONFLICT = "session_binding_conflict"
    CONFIGURATION_CONFLICT = "configuration_conflict"
    NATIVE_SESSION_CONFLICT = "native_session_conflict"
    HISTORY_UNAVAILABLE = "history_unavailable"
    EXECUTOR_CAPACITY = "executor_capacity"
    EXECUTOR_CLEANUP_UNCONFIRMED = "executor_cleanup_unconfirmed"
    INVALID_RELEASE = "invalid_release"
    UNKNOWN_PREPARATION = "unknown_preparation"
    INVALID_START = "invalid_start"
    READ_ONLY_PREPARATION = "read_only_preparation"
    UNKNOWN_EXECUTOR = "unknown_executor"
    START_CONFLICT = "start_conflict"
    PREPARATION_NOT_READY = "preparation_not_ready"
    RUN_CONFLICT = "run_conflict"
    EXECUTOR_UNAVAILABLE = "executor_unavailable"
    START_CANCELLED = "start_cancelled"
    PREPARATION_FAILED = "preparation_failed"
    STATUS_DELIVERY_FAILED = "status_delivery_failed"
    CONNECTION_CLOSED = "connection_closed"
    CLEANUP_UNCONFIRMED = "cleanup_unconfirmed"


class EngineFailureCode(StrEnum):
    """Native failure classification an adapter may attach to an `error` frame."""

    AUTHENTICATION_ERROR = "authentication_error"
    RATE_LIMIT_EXCEEDED = "rate_limit_exceeded"
    USAGE_LIMIT_EXCEEDED = "usage_limit_exceeded"
    SERVER_OVERLOADED = "server_overloaded"
    SERVER_ERROR = "server_error"
    INVALID_REQUEST = "invalid_request"
    RESOURCE_NOT_FOUND = "resource_not_found"
    REQUEST_TIMEOUT = "request_timeout"
    CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
    CYBER_POLICY = "cyber_policy"
    CONNECTION_FAILED = "connection_failed"


class CancelErrorCode(StrEnum):
    RUN_INACTIVE = "run_inactive"
    CANCEL_TIMEOUT = "cancel_timeout"
    CANCEL_FAILED = "cancel_failed"
    CANCEL_OUTPUT_UNAVAILABLE = "cancel_output_unavailable"
    CANCEL_OUTCOME_UNAVAILABLE = "cancel_outcome_unavailable"


class DecodeErrorCode(StrEnum):
    MALFORMED_FRAME = "malformed_frame"
    FRAME_TOO_LARGE = "frame_too_large"
    UNKNOWN_TYPE = "unknown_type"
    INVALID_PAYLOAD = "invalid_payload"
    INVALID_CAPABILITIES = "invalid_capabilities"
    INVALID_CORRELATION = "invalid_correlation"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    # A reply that breaks its family's rules: it proves nothing, the effect stays unknown.
    INVALID_RECEIPT = "invalid_receipt"


class LifecycleErrorCode(StrEnum):
    """Code of every illegal lifecycle transition (preparation, transfer, interaction)."""

    INVALID_TRANSITION = "invalid_transition"


class SteerErrorCode(StrEnum):
    """`prompt_steer_ack.error_code`."""

    INVALID_INPUT = "invalid_input"
    RUN_INACTIVE = "run_inactive"
    INPUT_CONFLICT = "input_conflict"
    INPUT_LIMIT = "input_limit"
    NOT_READY = "not_ready"
    BUSY = "busy"
    IN_FLIGHT = "in_flight"
    UNSUPPORTED = "unsupported"
    CONTRACT_VIOLATION = "contract_violation"
    REJECTED = "rejected"
    OUTCOME_UNKNOWN = "outcome_unknown"


class DecisionErrorCode(StrEnum):
    """`interaction_decision_ack.error_code` for function results and decisions.

    `invalid_decision` is corebox's code for a permission or user-choice decision that
    fails shared validation; the other codes are the catalogue's function-result codes.
    Cancellation acknowledgements use CancelErrorCode.
    """

    INVALID_RESULT = "invalid_result"
    INVALID_DECISION = "invalid_decision"
    NOT_READY = "not_ready"
    UNSUPPORTED = "unsupported"
    CONTRACT_VIOLATION = "contract_violation"
    NOT_PENDING = "not_pending"
    RUNTIME_ERROR = "runtime_error"
    DECISION_CONFLICT = "decision_conflict"


class RuntimePrepareErrorCode(StrEnum):
    """`runtime_prepare_result.error_code`: rejected, `_failed` or `_unconfirmed` (unknown)."""

    INVALID_REQUEST = "invalid_request"
    RESOURCE_UNAVAILABLE = "resource_unavailable"
    RUNTIME_PREPARATION_CAPACITY = "runtime_preparation_capacity"
    RUNTIME_PREPARATION_UNSUPPORTED = "runtime_preparation_unsupported"
    RUNTIME_PREPARATION_REJECTED = "runtime_preparation_rejected"
    RUNTIME_PREPARATION_FAILED = "runtime_preparation_failed"
    RUNTIME_PREPARATION_UNCONFIRMED = "runtime_preparation_unconfirmed"


class WriteErrorCode(StrEnum):
    """`workspace_write_result.error_code`: rejected, or unknown (`write_unconfirmed`)."""

    INVALID_REQUEST = "invalid_request"
    RESOURCE_UNAVAILABLE = "resource_unavailable"
    WRITE_CAPACITY = "write_capacity"
    WRITE_UNSUPPORTED = "write_unsupported"
    WRITE_REJECTED = "write_rejected"
    WRITE_UNCONFIRMED = "write_unconfirmed"


class WriteRejectReason(StrEnum):
    """Optional refinement of a `rejected`/`write_rejected` write result."""

    DESTINATION_DIRECTORY = "destination_directory"
    UNSAFE_DESTINATION = "unsafe_destination"


class ReadErrorCode(StrEnum):
    """`workspace_read_result.error_code`: rejected, or unknown (`read_unconfirmed`)."""

    INVALID_REQUEST = "invalid_request"
    RESOURCE_UNAVAILABLE = "resource_unavailable"
    READ_CAPACITY = "read_capacity"
    READ_UNSUPPORTED = "read_unsupported"
    NOT_FOUND = "not_found"
    PERMISSION_DENIED = "permission_denied"
    NOT_DIRECTORY = "not_directory"
    READ_UNCONFIRMED = "read_unconfirmed"


class ExportErrorCode(StrEnum):
    """`workspace_export_result.error_code` (`rejected` or `failed`)."""

    INVALID_REQUEST = "invalid_request"
    RESOURCE_UNAVAILABLE = "resource_unavailable"
    READ_UNSUPPORTED = "read_unsupported"
    EXPORT_FAILED = "export_failed"


class SuspensionErrorCode(StrEnum):
    """`environment_quiesced` / `environment_resumed` `error_code`."""

    INVALID_REQUEST = "invalid_request"
    RESOURCE_BUSY = "resource_busy"
    NOT_SUSPENDED = "not_suspended"


class ProtocolError(Exception):
    """A frame or payload the protocol rejects; `code` is finite, the text is safe to log."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class FrameTooLarge(ProtocolError):
    """A frame whose encoding is larger than the peer reads (`MAX_FRAME_BYTES`). It is
    never sent: the peer would close the whole connection on it, and with it every
    other operation the connection carries. `size` is its encoded length."""

    def __init__(self, frame_type: str, size: int, limit: int) -> None:
        super().__init__(
            DecodeErrorCode.FRAME_TOO_LARGE,
            f"the {frame_type} frame of {size} bytes exceeds the {limit}-byte frame limit",
        )
        self.frame_type = frame_type
        self.size = size
        self.limit = limit


class DecodeError(ProtocolError):
    """A frame that does not decode. When the envelope decoded but its payload did not,
    `frame_type` and `frame_id` name the request (so its family can answer it) and
    `field` is the JSON path of the first invalid field (for the log only: never sent)."""

    def __init__(
        self, code: str, message: str, *, frame_type: str = "", frame_id: str = "", field: str = ""
    ) -> None:
        super().__init__(code, message)
        self.frame_type = frame_type
        self.frame_id = frame_id
        self.field = field


class UnknownMessageType(ProtocolError):
    pass


class ValidationError(ProtocolError):
    pass


def classify_engine_failure(code: str, http_status: int) -> tuple[str, int]:
    """Return the accepted (code, http_status) pair of an `error` frame, or ("", 0).

    Only `connection_failed` keeps an HTTP status, and only one from 100 to 599; any
    unknown code leaves the failure unclassified.
    """
    try:
        accepted = EngineFailureCode(code)
    except ValueError:
        return "", 0
    if accepted is EngineFailureCode.CONNECTION_FAILED and 100 <= http_status <= 599:
        return accepted.value, http_status
    return accepted.value, 0

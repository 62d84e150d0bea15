"""The Core exception tree. The domain raises these; it never builds an HTTP response.

`allinone.core.api.errors.to_api_error` is the one place a `Refused` becomes the API's
error body (status, `type`, `code`, `param` and the `x-should-retry` header); anything
else in the tree that reaches a handler is an internal fault and answers 500.

    Exception
    +-- CoreError                      anything Core raises on purpose
        +-- Refused                    the request is refused; the caller is told why
        |   +-- InvalidRequest         400 invalid_request_error (param, code)
        |   +-- Unauthenticated        401: no or unknown key
        |   +-- NotFound               404 not_found_error (param)
        |   +-- Conflict               409 conflict_error; x-should-retry: false
        |   |   +-- TurnConflict       409 turn_conflict: the turn's state refuses it
        |   |   +-- IdempotencyConflict
        |   |                          409 idempotency_conflict: key reused, other body
        |   +-- Unavailable            503: a dependency cannot serve it now (retryable)
        |   |   +-- OutcomeUnknown     503; x-should-retry: false: it may have happened
        |   +-- comms.errors.CommsError
        |                              protocol 1.4's own subtree (upper-case codes)
        +-- IllegalTransition          states.py: a lifecycle refused a transition
        +-- SealError                  sealing.py: a sealed value cannot be opened
        +-- CredentialNotFound         vault_secrets.py: no such stored credential
        +-- ProviderUnavailable        model_providers.py: a provider cannot be used
        +-- Fenced, ContractViolation  orchestration/projector.py: a stale or broken
        |                              Runtime report
        +-- ResolutionFailed           orchestration/credentials.py
        +-- SendFailed                 gateway/connection.py: a frame was not sent
        |   +-- FrameTooLarge          ... because the Runtime would refuse its size
        +-- ObservationError           gateway/subscriptions.py
        +-- WorkspaceUnavailable       gateway/workspace_rules.py
        +-- PreparationError           gateway/preparations.py: unsent, unconfirmed
                                       or refused preparation, start or release

Beside this tree: `api.errors.ApiError` (the HTTP edge's own refusals: a body too large
or too slow, an unknown route; built only in `api/errors.py`), storage.errors.StorageError
(the storage tree: storage never imports allinone), the Runtime's own tree, and the
process-level errors of allinone (ConfigError, SecretKeyError, AdminError, StartupError,
RuntimeStopped, and the receiver's ReceiverError and IllegalJobTransition).

Messages never contain a credential, a prompt body or a file's content.
"""

from __future__ import annotations


class CoreError(Exception):
    """The root of everything Core raises on purpose."""


class Refused(CoreError):
    """A request Core refuses, with what the caller needs to know: an HTTP status, a
    machine-readable `code`, the offending `param`, and whether retrying can help."""

    status = 400
    default_code: str | None = None
    should_retry: bool | None = None  # None: the client decides from the status
    challenge = False  # True: the answer names the bearer scheme (`www-authenticate`)

    def __init__(self, message: str, *, code: str | None = None, param: str | None = None):
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else self.default_code
        self.param = param


class InvalidRequest(Refused):
    status = 400

    def __init__(self, message: str, param: str | None = None, *, code: str | None = None):
        super().__init__(message, code=code, param=param)


class Unauthenticated(Refused):
    status = 401
    challenge = True


class NotFound(Refused):
    status = 404
    default_code = "not_found_error"

    def __init__(
        self,
        message: str = "Resource not found.",
        *,
        code: str | None = None,
        param: str | None = None,
    ):
        super().__init__(message, code=code, param=param)


class Conflict(Refused):
    status = 409
    default_code = "conflict_error"
    should_retry = False


class TurnConflict(Conflict):
    default_code = "turn_conflict"


class IdempotencyConflict(Conflict):
    default_code = "idempotency_conflict"


class Unavailable(Refused):
    status = 503


class OutcomeUnknown(Unavailable):
    should_retry = False

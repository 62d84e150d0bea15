"""Continuous communication, protocol 1.4 (seed 002): roles, instances, contacts, event
streams, receipts, receiver self-reports, claims with leases, progress and retention.

Routes (in `allinone.core.api`, since this package does not speak HTTP): the runtime
protocol under `/api/v1` (`api/comms.py`, authorised by an instance's runtime bearer
token) and the owner's identity management under `/core/v1/comms` (`api/comms_owner.py`,
authorised by a project API key). `service.Comms` builds the parts.

Exception tree (errors.py), a subtree of `allinone.core.errors.Refused`; the app's one
mapping (`allinone.core.api.errors.to_api_error`) turns it into the API's error body,
with the protocol's upper-case code:

    CommsError                     anything this package refuses (400 INVALID_REQUEST)
    +-- Unauthenticated            401: no or unknown runtime token / project key
    +-- Forbidden                  403: NOT_PRIMARY_INSTANCE, NOT_ORIGINAL_RECIPIENT, ...
    +-- NotFound                   404: ROLE_NOT_FOUND, CONTACT_NOT_FOUND, ...
    +-- PreconditionRequired       428: PRIMARY_EPOCH_REQUIRED, TASK_LEASE_REQUIRED
    +-- Rejected                   409: the request conflicts with the current state:
        |                               PRIMARY_EPOCH_MISMATCH, IDEMPOTENCY_CONFLICT,
        |                               CONTACT_CLOSED, REPLY_LIMIT_REACHED,
        |                               CURSOR_RESET_REQUIRED, STREAM_CHANGED, TASK_BUSY,
        |                               TASK_ALREADY_HANDLED, OWNER_CONFIRMATION_REQUIRED,
        |                               TASK_LEASE_INVALID, TASK_LEASE_EXPIRED,
        |                               TASK_LEASE_EPOCH_STALE, TASK_LEASE_REUSED,
        |                               TASK_WATERMARK_MISMATCH
        +-- IllegalTransition      409 ILLEGAL_TRANSITION: a lifecycle (states.py) refused

storage.Conflict raised by a lost compare-and-set is translated to Rejected where it
happens; nothing from sqlite3 crosses this package.

May import: `storage`, `allinone.core.ids`, msgspec and the standard library; only its
HTTP adapters (`api.py`, `owner_api.py`) import Starlette and `allinone.core.api`
(`service.py` hands their routes to the composition root).
"""

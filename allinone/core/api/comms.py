"""The runtime side of protocol 1.4 under `/api/v1`, authorised by an instance's runtime
bearer token. Every request declares `X-A2A-Protocol: 1.4`; every write carries the
`X-A2A-Primary-Epoch` from GET /me; message writes carry an `Idempotency-Key`; writes on
a claimed contact carry `X-A2A-Task-Lease` and `X-A2A-Task-Epoch`.

Handlers only parse the request, call one domain method and render its result; a
CommsError is part of the Core tree, so the app's one mapping
(`allinone.core.api.errors.to_api_error`) turns it into the API's error body.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from allinone.core.api.common import decode_body, json
from allinone.core.api.errors import ApiError, recoded, to_api_error
from allinone.core.comms.claims import Claims
from allinone.core.comms.contacts import Contacts
from allinone.core.comms.errors import CommsError, PreconditionRequired, Unauthenticated
from allinone.core.comms.events import Events
from allinone.core.comms.identities import Caller, Identities
from allinone.core.comms.leases import LeaseHeaders
from allinone.core.comms.limits import (
    EPOCH_HEADER,
    EVENTS_PAGE_DEFAULT,
    EVENTS_PAGE_MAX,
    LEASE_EPOCH_HEADER,
    LEASE_HEADER,
    MAX_IDEMPOTENCY_KEY_BYTES,
    PROTOCOL_HEADER,
    PROTOCOL_VERSION,
)
from allinone.core.comms.models import (
    Accept,
    Claim,
    Close,
    OpenContact,
    Progress,
    Receipts,
    ReceiverReport,
    Reply,
)
from allinone.core.comms.receipts import Receipts as ReceiptLog
from allinone.core.comms.receivers import Receivers
from allinone.core.errors import Refused
from allinone.core.numbers import whole_number

T = TypeVar("T")
Handler = Callable[[Request], Awaitable[Response]]
PREFIX = "/api/v1"


async def decode(request: Request, type_: type[T]) -> T:
    try:
        return await decode_body(request, type_)
    except (ApiError, Refused) as exc:
        error = exc if isinstance(exc, ApiError) else to_api_error(exc)
        code = "REQUEST_TOO_LARGE" if error.status == 413 else "INVALID_REQUEST"
        raise recoded(error, code) from exc


def _integer(raw: str, name: str) -> int:
    """A header's or query's integer as written: ASCII digits with an optional minus,
    within 64 bits (not Python's `int`, which takes `1_0`, `+5` and spaces)."""
    digits = raw.removeprefix("-")
    number = whole_number(digits, 0, 2**63 - 1)
    if number is None:
        raise CommsError(f"{name} must be an integer.", param=name)
    return number if digits == raw else -number


def _int_header(request: Request, name: str) -> int | None:
    raw = request.headers.get(name)
    if raw is None or raw == "":
        return None
    return _integer(raw, name)


def _int_query(request: Request, name: str, default: int, low: int, high: int | None) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    value = _integer(raw, name)
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise CommsError(f"{name} must be {bound}.", param=name)
    return value


def lease_headers(request: Request) -> LeaseHeaders:
    return LeaseHeaders(
        request.headers.get(LEASE_HEADER) or None, _int_header(request, LEASE_EPOCH_HEADER)
    )


def idempotency_key(request: Request) -> str:
    key = request.headers.get("idempotency-key") or ""
    if not key.strip():
        raise CommsError(
            "Message writes need an Idempotency-Key header.", code="IDEMPOTENCY_KEY_REQUIRED"
        )
    if len(key.encode()) > MAX_IDEMPOTENCY_KEY_BYTES:
        raise CommsError("Idempotency-Key may be at most 128 bytes.", param="Idempotency-Key")
    return key


class CommsApi:
    def __init__(
        self,
        identities: Identities,
        contacts: Contacts,
        events: Events,
        receipts: ReceiptLog,
        receivers: Receivers,
        claims: Claims,
    ) -> None:
        self._identities = identities
        self._contacts = contacts
        self._events = events
        self._receipts = receipts
        self._receivers = receivers
        self._claims = claims

    def routes(self) -> list[Route]:
        contact = PREFIX + "/contacts/{contact_id}"
        table: list[tuple[str, Handler, str]] = [
            (PREFIX + "/me", self.me, "GET"),
            (PREFIX + "/contacts", self.open_contact, "POST"),
            (contact + "/communication", self.communication, "GET"),
            (contact + "/reply", self.reply, "POST"),
            (contact + "/accept", self.accept, "POST"),
            (contact + "/close", self.close, "POST"),
            (contact + "/claim", self.claim, "POST"),
            (contact + "/progress", self.progress, "POST"),
            (PREFIX + "/communication/events", self.events, "GET"),
            (PREFIX + "/communication/receipts", self.receipts, "POST"),
            (PREFIX + "/communication/receiver", self.receiver_status, "GET"),
            (PREFIX + "/communication/receiver", self.receiver_report, "PUT"),
        ]
        return [Route(path, fn, methods=[method]) for path, fn, method in table]

    async def _caller(self, request: Request, *, write: bool) -> Caller:
        version = request.headers.get(PROTOCOL_HEADER)
        if version != PROTOCOL_VERSION:
            shown = "none" if version is None else repr(version[:20])
            raise CommsError(
                f"This server speaks continuous-communication protocol {PROTOCOL_VERSION}:"
                f" send X-A2A-Protocol: {PROTOCOL_VERSION} (got {shown}).",
                code="PROTOCOL_VERSION_UNSUPPORTED",
                param="X-A2A-Protocol",
            )
        header = request.headers.get("authorization", "")
        token = header[len("Bearer ") :].strip() if header.startswith("Bearer ") else ""
        found = await self._identities.authenticate(token) if token else None
        if found is None:
            raise Unauthenticated("A valid instance runtime bearer token is required.")
        epoch = _int_header(request, EPOCH_HEADER)
        if write and epoch is None:
            raise PreconditionRequired(
                "Writes must carry X-A2A-Primary-Epoch from GET /api/v1/me.",
                code="PRIMARY_EPOCH_REQUIRED",
            )
        return Caller(found[0], found[1], epoch)

    async def me(self, request: Request) -> Response:
        return json(await self._identities.me(await self._caller(request, write=False)))

    async def open_contact(self, request: Request) -> Response:
        caller = await self._caller(request, write=True)
        body = await decode(request, OpenContact)
        view, replayed = await self._contacts.open(caller, body, idempotency_key(request))
        return message_response(view, replayed)

    async def communication(self, request: Request) -> Response:
        caller = await self._caller(request, write=False)
        return json(await self._contacts.communication(caller, request.path_params["contact_id"]))

    async def reply(self, request: Request) -> Response:
        caller = await self._caller(request, write=True)
        body = await decode(request, Reply)
        view, replayed = await self._contacts.reply(
            caller,
            request.path_params["contact_id"],
            body,
            idempotency_key(request),
            lease_headers(request),
        )
        return message_response(view, replayed)

    async def accept(self, request: Request) -> Response:
        caller = await self._caller(request, write=True)
        body = await decode(request, Accept)
        if body.accept is not True:
            raise CommsError('To accept a contact send {"accept": true}.', param="accept")
        return json(
            await self._contacts.accept(
                caller, request.path_params["contact_id"], lease_headers(request)
            )
        )

    async def close(self, request: Request) -> Response:
        caller = await self._caller(request, write=True)
        await decode(request, Close)
        return json(
            await self._contacts.close(
                caller, request.path_params["contact_id"], lease_headers(request)
            )
        )

    async def claim(self, request: Request) -> Response:
        caller = await self._caller(request, write=True)
        body = await decode(request, Claim)
        return json(await self._claims.claim(caller, request.path_params["contact_id"], body))

    async def progress(self, request: Request) -> Response:
        caller = await self._caller(request, write=True)
        body = await decode(request, Progress)
        return json(
            await self._claims.progress(
                caller, request.path_params["contact_id"], body, lease_headers(request)
            )
        )

    async def events(self, request: Request) -> Response:
        caller = await self._caller(request, write=False)
        after = _int_query(request, "after", 0, 0, None)
        limit = _int_query(request, "limit", EVENTS_PAGE_DEFAULT, 1, EVENTS_PAGE_MAX)
        stream_id = request.query_params.get("stream_id") or None
        return json(await self._events.read(caller, after, limit, stream_id))

    async def receipts(self, request: Request) -> Response:
        caller = await self._caller(request, write=True)
        body = await decode(request, Receipts)
        return json(await self._receipts.record(caller, body))

    async def receiver_report(self, request: Request) -> Response:
        caller = await self._caller(request, write=True)
        body = await decode(request, ReceiverReport)
        return json(await self._receivers.report(caller, body))

    async def receiver_status(self, request: Request) -> Response:
        caller = await self._caller(request, write=False)
        return json(await self._receivers.status(caller))


def message_response(view: dict[str, Any], replayed: bool) -> Response:
    response = json(view)
    if replayed:
        response.headers["idempotent-replayed"] = "true"
    return response

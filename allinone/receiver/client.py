"""HTTP clients for the platform, on the standard library only.

`Http` sends JSON with a Bearer credential to one confirmed origin and never follows a
redirect (a 3xx is a TransportError). `PlatformClient` is the runtime side of protocol
1.4 for one instance: it declares `X-A2A-Protocol: 1.4` on every request and adds the
primary epoch, lease and idempotency headers where the protocol needs them. No token,
lease id or message body is ever logged or put into an exception message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from allinone.receiver.errors import PlatformError, TransportError

PROTOCOL_VERSION = "1.4"
TIMEOUT_SECONDS = 30.0
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def check_origin(origin: str) -> str:
    """Return the origin without a trailing slash; https, or http on a loopback host."""
    parts = urllib.parse.urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("origin must be an http(s) URL")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError("origin must be scheme://host[:port] with nothing after it")
    if parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
        raise ValueError("origin must use https unless it is a loopback address")
    return f"{parts.scheme}://{parts.netloc}"


def is_loopback(origin: str) -> bool:
    return urllib.parse.urlsplit(origin).hostname in LOOPBACK_HOSTS


class Http:
    def __init__(self, origin: str, bearer: str, timeout: float = TIMEOUT_SECONDS) -> None:
        self._origin = origin
        self._bearer = bearer
        self._timeout = timeout
        self._opener = urllib.request.build_opener(_NoRedirect())

    def call(
        self,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """Send one request; return (JSON body, lower-cased response headers)."""
        url = self._origin + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self._bearer}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with self._opener.open(request, timeout=self._timeout) as response:
                raw = response.read(MAX_RESPONSE_BYTES + 1)
                found = {k.lower(): v for k, v in response.headers.items()}
                status = response.status
        except urllib.error.HTTPError as exc:
            raw = exc.read(MAX_RESPONSE_BYTES + 1)
            exc.close()
            raise _platform_error(exc.code, raw) from None
        except (TimeoutError, urllib.error.URLError, OSError) as exc:
            raise TransportError(f"{method} {url}: {_unreachable(exc)}") from exc
        if not 200 <= status < 300:
            raise TransportError(f"{method} {path}: unexpected status {status}")
        return _decode(raw, f"{method} {path}"), found


def _unreachable(exc: BaseException) -> str:
    """Why a request got no answer, in words: `connection refused`, `timed out`."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, TimeoutError):
        return "no answer (timed out)"
    said = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
    return f"no answer ({str(said).lower()})"


def _decode(raw: bytes, what: str) -> dict[str, Any]:
    if len(raw) > MAX_RESPONSE_BYTES:
        raise TransportError(f"{what}: response too large")
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise TransportError(f"{what}: response is not JSON") from exc
    if not isinstance(value, dict):
        raise TransportError(f"{what}: response is not a JSON object")
    return value


def _platform_error(status: int, raw: bytes) -> Exception:
    if 300 <= status < 400:
        return TransportError(f"refused to follow a redirect ({status})")
    try:
        error = json.loads(raw).get("error") or {}
        code = str(error.get("code") or f"HTTP_{status}")
        message = str(error.get("message") or "")[:300]
    except (ValueError, AttributeError):
        code, message = f"HTTP_{status}", ""
    return PlatformError(status, code, message)


class PlatformClient:
    """One instance's view of the platform's `/api/v1` communication routes."""

    def __init__(self, http: Http) -> None:
        self._http = http

    def _call(
        self,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        query: dict[str, Any] | None = None,
        epoch: int | None = None,
        lease: tuple[str, int] | None = None,
        idempotency_key: str | None = None,
    ) -> tuple[dict[str, Any], dict[str, str]]:
        headers = {"X-A2A-Protocol": PROTOCOL_VERSION}
        if epoch is not None:
            headers["X-A2A-Primary-Epoch"] = str(epoch)
        if lease is not None:
            headers["X-A2A-Task-Lease"] = lease[0]
            headers["X-A2A-Task-Epoch"] = str(lease[1])
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return self._http.call(method, "/api/v1" + path, body=body, query=query, headers=headers)

    def me(self) -> dict[str, Any]:
        return self._call("GET", "/me")[0]

    def events(self, after: int, limit: int, stream_id: str | None) -> dict[str, Any]:
        query = {"after": after, "limit": limit, "stream_id": stream_id}
        return self._call("GET", "/communication/events", query=query)[0]

    def receipts(
        self, saved: list[tuple[int, str]], epoch: int, stream_id: str | None
    ) -> dict[str, Any]:
        """Confirm saved events, (seq, event_id) each. The platform refuses with
        STREAM_CHANGED when its stream is no longer `stream_id`, and with EVENT_MISMATCH
        when a seq now names another event, instead of confirming what was not saved."""
        body: dict[str, Any] = {
            "event_seqs": [seq for seq, _ in saved],
            "event_ids": [event_id for _, event_id in saved],
            "persisted": True,
        }
        if stream_id is not None:
            body["stream_id"] = stream_id
        return self._call("POST", "/communication/receipts", body=body, epoch=epoch)[0]

    def report_receiver(self, mode: str, handler_state: str, enabled: bool, epoch: int) -> None:
        body = {"mode": mode, "handler_state": handler_state, "enabled": enabled}
        self._call("PUT", "/communication/receiver", body=body, epoch=epoch)

    def receiver_status(self) -> dict[str, Any]:
        return self._call("GET", "/communication/receiver")[0]

    def communication(self, contact_id: str) -> dict[str, Any]:
        return self._call("GET", f"/contacts/{_segment(contact_id)}/communication")[0]

    def open_contact(
        self, to_role_id: str, message: str, epoch: int, key: str
    ) -> tuple[dict[str, Any], bool]:
        body = {"to_role_id": to_role_id, "message": message}
        found, headers = self._call(
            "POST", "/contacts", body=body, epoch=epoch, idempotency_key=key
        )
        return found, headers.get("idempotent-replayed") == "true"

    def claim(self, contact_id: str, body: dict[str, Any], epoch: int) -> dict[str, Any]:
        path = f"/contacts/{_segment(contact_id)}/claim"
        return self._call("POST", path, body=body, epoch=epoch)[0]

    def progress(
        self, contact_id: str, through_seq: int, phase: str, epoch: int, lease: tuple[str, int]
    ) -> dict[str, Any]:
        path = f"/contacts/{_segment(contact_id)}/progress"
        body = {"through_seq": through_seq, "phase": phase}
        return self._call("POST", path, body=body, epoch=epoch, lease=lease)[0]

    def reply(
        self,
        contact_id: str,
        message: str,
        key: str,
        epoch: int,
        lease: tuple[str, int] | None,
    ) -> tuple[dict[str, Any], bool]:
        path = f"/contacts/{_segment(contact_id)}/reply"
        found, headers = self._call(
            "POST", path, body={"message": message}, epoch=epoch, lease=lease, idempotency_key=key
        )
        return found, headers.get("idempotent-replayed") == "true"

    def accept(self, contact_id: str, epoch: int, lease: tuple[str, int] | None) -> dict[str, Any]:
        path = f"/contacts/{_segment(contact_id)}/accept"
        return self._call("POST", path, body={"accept": True}, epoch=epoch, lease=lease)[0]

    def close(self, contact_id: str, epoch: int, lease: tuple[str, int] | None) -> dict[str, Any]:
        path = f"/contacts/{_segment(contact_id)}/close"
        return self._call("POST", path, body={}, epoch=epoch, lease=lease)[0]


def _segment(value: str) -> str:
    return urllib.parse.quote(value, safe="")

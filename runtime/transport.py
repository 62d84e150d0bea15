"""The Runtime's transport shell: bootstrap over HTTP, the WebSocket connection, and
reconnect backoff. Frames are decoded and encoded by `runtime.proto`; this module only
moves bytes and enforces deadlines.

    TransportError
    +-- PermanentError     401/403/426 or close 4001: an operator must fix something
    +-- TransientError     anything else: reconnect with backoff
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlencode

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus, WebSocketException

from runtime.coalesce import Coalesced
from runtime.errors import RuntimeFault
from runtime.proto import limits
from runtime.proto.version import VERSION

PERMANENT_STATUSES = frozenset({401, 403, 426})


class TransportError(RuntimeFault):
    pass


class PermanentError(TransportError):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class TransientError(TransportError):
    pass


@dataclass(frozen=True)
class BootstrapInfo:
    device_id: str
    ws_url: str
    heartbeat_seconds: int
    protocol_version: str


def backoff_delay(attempt: int, rand: random.Random | None = None) -> float:
    """Delay before reconnect attempt `attempt` (1-based): 1 s doubling to 30 s, +-20%.
    The first attempt after a loss is immediate (attempt 0)."""
    if attempt <= 0:
        return 0.0
    base = min(
        limits.BACKOFF_INITIAL_SECONDS * limits.BACKOFF_FACTOR ** (attempt - 1),
        limits.BACKOFF_MAX_SECONDS,
    )
    jitter = (rand or random).uniform(-limits.BACKOFF_JITTER, limits.BACKOFF_JITTER)
    return float(base * (1 + jitter))


class Backoff:
    """The reconnect schedule: `initial` doubling to `cap`, each delay +-`jitter`.

    `next_delay()` returns the delay before the next attempt and advances the schedule;
    `reset()` starts it over, which the daemon does only after a connection stayed up and
    useful. Production uses the defaults (1 s doubling to 30 s, +-20 %); tests inject a
    shorter schedule or a seeded `rand`."""

    def __init__(
        self,
        initial: float = limits.BACKOFF_INITIAL_SECONDS,
        cap: float = limits.BACKOFF_MAX_SECONDS,
        rand: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.cap = cap
        self._rand = rand
        self.attempt = 0

    def next_delay(self) -> float:
        self.attempt += 1
        base = min(self.initial * limits.BACKOFF_FACTOR ** (self.attempt - 1), self.cap)
        jitter = (self._rand or random).uniform(-limits.BACKOFF_JITTER, limits.BACKOFF_JITTER)
        return float(base * (1 + jitter))

    def reset(self) -> None:
        self.attempt = 0


def unreachable(exc: BaseException) -> str:
    """Why a request got no answer, in words: `no answer (connection refused)`,
    `no answer (timed out)`, `TLS failed (certificate has expired)`. The words of
    `corebox comms` (allinone/receiver/client.py), in a copy of the Runtime's own: the
    Runtime may not import allinone, nor the receiver the Runtime."""
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, TimeoutError):
        return "no answer (timed out)"
    if isinstance(reason, ssl.SSLCertVerificationError) and reason.verify_message:
        return f"TLS failed ({reason.verify_message})"
    if isinstance(reason, ssl.SSLError) and reason.reason:
        return f"TLS failed ({reason.reason.lower().replace('_', ' ')})"
    said = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
    if isinstance(reason, ConnectionError) and reason.errno:
        said = os.strerror(reason.errno)  # asyncio says `Connect call failed (addr)`
    return f"no answer ({str(said).lower()})"


def _post_bootstrap(core_url: str, credential: str, device_id: str) -> BootstrapInfo:
    url = f"{core_url.rstrip('/')}/agent-daemon/bootstrap"
    request = urllib.request.Request(
        url,
        data=json.dumps({"device_id": device_id}).encode(),
        headers={
            "Authorization": f"Bearer {credential}",
            "Content-Type": "application/json",
            "User-Agent": "corebox-runtime",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=limits.HANDSHAKE_TIMEOUT_SECONDS) as reply:
            raw = reply.read(limits.BOOTSTRAP_RESPONSE_MAX_BYTES)
    except urllib.error.HTTPError as exc:
        if exc.code in PERMANENT_STATUSES:
            raise PermanentError(f"bootstrap refused with HTTP {exc.code}", exc.code) from exc
        raise TransientError(f"bootstrap at {url} failed with HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise TransientError(f"bootstrap at {url} failed: {unreachable(exc)}") from exc
    except ValueError as exc:  # http.client.InvalidURL: no request can carry the address
        raise TransientError(f"bootstrap at {url} failed: {exc}") from exc
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    return bootstrap_info(body, url)


def bootstrap_info(body: object, url: str) -> BootstrapInfo:
    """What a bootstrap answer `body` (decoded JSON) says; TransientError for an answer
    that does not say it (no object, no device id, a heartbeat interval that is not a
    positive whole number of seconds): the next attempt asks again."""
    if not isinstance(body, dict):
        raise TransientError(f"bootstrap at {url} answered with no JSON object")
    device = str(body.get("device_id") or "")
    if not device:
        raise TransientError("bootstrap returned no device_id")
    heartbeat = body.get("heartbeat_seconds")
    if heartbeat is None:
        heartbeat = limits.HEARTBEAT_SECONDS_DEFAULT
    if not isinstance(heartbeat, int) or isinstance(heartbeat, bool) or heartbeat <= 0:
        raise TransientError(
            f"bootstrap at {url} answered heartbeat_seconds {heartbeat!r},"
            " not a positive whole number of seconds"
        )
    return BootstrapInfo(
        device_id=device,
        ws_url=str(body.get("ws_url") or ""),
        heartbeat_seconds=heartbeat,
        protocol_version=str(body.get("protocol_version") or ""),
    )


async def bootstrap(core_url: str, credential: str, device_id: str) -> BootstrapInfo:
    return await asyncio.to_thread(_post_bootstrap, core_url, credential, device_id)


async def open_socket(
    ws_url: str, credential: str, device_id: str, version: str = VERSION
) -> ClientConnection:
    """Connect with the credential in the Authorization header, never in the URL; the
    frames written in one loop step then go out in one socket write (`Coalesced`)."""
    url = f"{ws_url}?{urlencode({'device_id': device_id, 'version': version})}"
    try:
        socket = await connect(
            url,
            additional_headers={"Authorization": f"Bearer {credential}"},
            max_size=limits.MAX_FRAME_BYTES,
            open_timeout=limits.HANDSHAKE_TIMEOUT_SECONDS,
            ping_interval=None,
            compression=None,
        )
    except InvalidStatus as exc:
        status = exc.response.status_code
        if status in PERMANENT_STATUSES:
            raise PermanentError(f"connection refused with HTTP {status}", status) from exc
        raise TransientError(f"connection to {ws_url} refused with HTTP {status}") from exc
    except (OSError, TimeoutError) as exc:
        raise TransientError(f"connection to {ws_url} failed: {unreachable(exc)}") from exc
    except WebSocketException as exc:
        raise TransientError(f"connection to {ws_url} failed: {exc}") from exc
    socket.transport = Coalesced(socket.transport, asyncio.get_running_loop())
    return socket

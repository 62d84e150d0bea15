"""Raw HTTP helpers for the protocol 1.4 routes: every header is explicit, so tests can
send exactly what a client would, including wrong or missing headers. Every answer is
checked against the server's `/openapi.json` (its schema for that route and status)."""

from __future__ import annotations

import functools
import json
import secrets
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from tests.api.support import OpenApi
from tests.conftest import API_KEY

PROTOCOL = {"X-A2A-Protocol": "1.4"}


@dataclass
class Answer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def code(self) -> str | None:
        error = self.body.get("error")
        return None if error is None else error.get("code")


def call(
    base_url: str,
    method: str,
    path: str,
    *,
    bearer: str,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    query: dict[str, Any] | None = None,
) -> Answer:
    url = base_url + path
    if query:
        url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {bearer}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw, status = response.read(), response.status
            found = {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
        found = {k.lower(): v for k, v in exc.headers.items()}
        exc.close()
    body = json.loads(raw) if raw else {}
    documented(base_url).check_response(method, urllib.parse.urlsplit(url).path, status, body)
    return Answer(status, body, found)


@functools.cache
def documented(base_url: str) -> OpenApi:
    """The server's OpenAPI document (read once per server)."""
    with urllib.request.urlopen(base_url + "/openapi.json", timeout=30) as response:
        return OpenApi(json.loads(response.read()))


def new_lease() -> str:
    return secrets.token_hex(24)


class Owner:
    """The project owner, with the project API key."""

    def __init__(self, base_url: str, key: str = API_KEY) -> None:
        self.base_url = base_url
        self.key = key

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Answer:
        return call(self.base_url, method, "/core/v1/comms" + path, bearer=self.key, body=body)

    def role(self, name: str, agent_id: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"name": name}
        if agent_id is not None:
            body["agent_id"] = agent_id
        answer = self.call("POST", "/roles", body)
        assert answer.status == 200, answer.body
        return answer.body

    def instance(self, role_id: str, name: str) -> tuple[dict[str, Any], str]:
        answer = self.call("POST", f"/roles/{role_id}/instances", {"name": name})
        assert answer.status == 200, answer.body
        token = answer.body.pop("token")
        return answer.body, token

    def set_primary(self, role_id: str, instance_id: str, expected_epoch: int) -> Answer:
        return self.call(
            "POST",
            f"/roles/{role_id}/primary",
            {"instance_id": instance_id, "expected_epoch": expected_epoch},
        )


class Inst:
    """One registered instance speaking protocol 1.4 with its runtime token."""

    def __init__(self, base_url: str, token: str, role_id: str, instance_id: str) -> None:
        self.base_url = base_url
        self.token = token
        self.role_id = role_id
        self.instance_id = instance_id

    def get(self, path: str, query: dict[str, Any] | None = None, **kw: Any) -> Answer:
        headers = {**PROTOCOL, **kw.pop("headers", {})}
        return call(
            self.base_url, "GET", "/api/v1" + path, bearer=self.token, headers=headers, query=query
        )

    def me(self) -> dict[str, Any]:
        answer = self.get("/me")
        assert answer.status == 200, answer.body
        return answer.body

    def post(
        self,
        path: str,
        body: dict[str, Any],
        *,
        epoch: int | None = None,
        lease: tuple[str, int] | None = None,
        key: str | None = None,
        method: str = "POST",
    ) -> Answer:
        headers = dict(PROTOCOL)
        headers["X-A2A-Primary-Epoch"] = str(self.me()["primary_epoch"] if epoch is None else epoch)
        if lease is not None:
            headers["X-A2A-Task-Lease"] = lease[0]
            headers["X-A2A-Task-Epoch"] = str(lease[1])
        if key is not None:
            headers["Idempotency-Key"] = key
        return call(
            self.base_url, method, "/api/v1" + path, bearer=self.token, body=body, headers=headers
        )

    def open(self, to_role: str, text: str, key: str | None = None) -> Answer:
        return self.post(
            "/contacts", {"to_role_id": to_role, "message": text}, key=key or secrets.token_hex(8)
        )

    def reply(
        self,
        contact_id: str,
        text: str,
        key: str | None = None,
        lease: tuple[str, int] | None = None,
    ) -> Answer:
        return self.post(
            f"/contacts/{contact_id}/reply",
            {"message": text},
            key=key or secrets.token_hex(8),
            lease=lease,
        )

    def claim(self, contact_id: str, lease_id: str, through_seq: int, **extra: Any) -> Answer:
        body = {"lease_id": lease_id, "through_seq": through_seq, **extra}
        return self.post(f"/contacts/{contact_id}/claim", body)

    def progress(
        self, contact_id: str, through_seq: int, phase: str, lease: tuple[str, int] | None
    ) -> Answer:
        body = {"through_seq": through_seq, "phase": phase}
        return self.post(f"/contacts/{contact_id}/progress", body, lease=lease)

    def events(self, after: int = 0, stream_id: str | None = None, limit: int = 100) -> Answer:
        return self.get(
            "/communication/events", {"after": after, "limit": limit, "stream_id": stream_id}
        )

    def receipts(self, seqs: list[int]) -> Answer:
        return self.post("/communication/receipts", {"event_seqs": seqs, "persisted": True})

    def communication(self, contact_id: str) -> dict[str, Any]:
        answer = self.get(f"/contacts/{contact_id}/communication")
        assert answer.status == 200, answer.body
        return answer.body

    def inbound(self, contact_id: str) -> list[dict[str, Any]]:
        items = self.events().body["items"]
        return [e for e in items if e["contact_id"] == contact_id and e["direction"] == "inbound"]


def pair(base_url: str, owner: Owner | None = None) -> tuple[Inst, Inst]:
    """Two fresh roles, each with one (primary) instance."""
    owner = owner or Owner(base_url)
    found = []
    for name in ("alice", "bob"):
        role = owner.role(name)
        instance, token = owner.instance(role["id"], f"{name}-1")
        found.append(Inst(base_url, token, role["id"], instance["id"]))
    return found[0], found[1]

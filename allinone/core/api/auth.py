"""Authentication as one pure ASGI middleware, with its policy declared in one table.

`POLICIES` maps a path prefix (the longest matching one wins) to what a route under it
requires. `guard(routes, keys)` wraps each HTTP route's app, so a request is routed
first (an unknown path is a 404 and a wrong method a 405, whatever its key) and then
authenticated before its handler runs. The middleware puts the caller's `Principal`
into `scope["state"]["principal"]`; handlers read it with `project_of(request)` or
`principal_of(request)` and never look at the key themselves.

Policies:
- `AGENTS`: the `OpenAI-Beta: agents=v1` header (400 `invalid_beta` otherwise), then a
  project's API key (401 otherwise).
- `PROJECT`: a project's API key.
- `CORE`: the Core key.
- `CORE_OR_PROJECT`: the Core key or a project's API key.
- `OPTIONAL`: whatever key is presented, or none; never refused, and a storage fault
  while resolving it is the anonymous view (health probes keep working).
- `PUBLIC`: no key is read here: the route has none, or checks a credential of its own
  protocol (a Runtime's device credential, protocol 1.4's runtime tokens).

Keys are compared by SHA-256 digest; no key is ever stored, logged or echoed.
"""

from __future__ import annotations

import enum
import hmac
from collections.abc import Iterable

import msgspec
from starlette.requests import Request
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from allinone.core.api.common import check_beta
from allinone.core.errors import Unauthenticated
from allinone.core.projects import digest_key
from allinone.credentials import CORE_KEY_META
from storage import tenancy
from storage.database import Database
from storage.errors import StorageError


class Policy(enum.Enum):
    AGENTS = "agents"
    PROJECT = "project"
    CORE = "core"
    CORE_OR_PROJECT = "core_or_project"
    OPTIONAL = "optional"
    PUBLIC = "public"


POLICIES: dict[str, Policy] = {
    "/v1/files": Policy.PROJECT,  # the Files API takes no OpenAI-Beta header
    "/v1/skills": Policy.PROJECT,  # nor does the Skills API
    "/v1/": Policy.AGENTS,
    "/x/v1/": Policy.PROJECT,  # corebox-only operations on a project's resources
    "/core/v1/comms/": Policy.PROJECT,
    "/core/v1/harnesses": Policy.CORE_OR_PROJECT,
    "/core/v1/": Policy.CORE,
    "/api/v1/": Policy.PUBLIC,
    "/healthz": Policy.OPTIONAL,
    "/readyz": Policy.OPTIONAL,
    "/openapi.json": Policy.PUBLIC,
}


class Kind(enum.Enum):
    ANONYMOUS = "anonymous"
    PROJECT = "project"
    CORE = "core"


class Principal(msgspec.Struct, frozen=True):
    """`key_id` names the project key a request acted with (a command's actor)."""

    kind: Kind
    project: str | None = None
    key_id: str | None = None


ANONYMOUS = Principal(Kind.ANONYMOUS)
NEED_PROJECT_KEY = "A valid Agents API bearer key is required."
NEED_CORE_KEY = "A valid Core key is required."


def policy_for(path: str) -> Policy:
    """The policy of the longest prefix of `path` in `POLICIES`; a path the table does not
    cover is a programming error (every route must be declared)."""
    matches = [prefix for prefix in POLICIES if path.startswith(prefix)]
    if not matches:
        raise LookupError(f"no authentication policy covers {path}")
    return POLICIES[max(matches, key=len)]


def bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    return header[len("Bearer ") :].strip() if header.startswith("Bearer ") else ""


class Keys:
    """Resolves a presented bearer key against the store."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def is_core(self, key: str) -> bool:
        if not key:
            return False
        stored = await self._db.read_now(lambda r: tenancy.get_meta(r, CORE_KEY_META))
        return stored is not None and hmac.compare_digest(digest_key(key), stored)

    async def project(self, key: str) -> str | None:
        if not key:
            return None
        digest = digest_key(key)
        return await self._db.read_now(lambda r: tenancy.project_for_key(r, digest))

    async def project_key(self, key: str) -> tuple[str, str] | None:
        """The (project id, key id) of a live project key, or None."""
        if not key:
            return None
        digest = digest_key(key)
        return await self._db.read_now(lambda r: tenancy.key_for_digest(r, digest))

    async def resolve(self, key: str) -> Principal:
        if await self.is_core(key):
            return Principal(Kind.CORE)
        project = await self.project(key)
        return Principal(Kind.PROJECT, project) if project is not None else ANONYMOUS


async def authenticate(policy: Policy, keys: Keys, request: Request) -> Principal:
    """The caller under `policy`, or the refusal (`InvalidRequest`, `Unauthenticated`)."""
    key = bearer(request)
    if policy is Policy.AGENTS:
        check_beta(request)
    # A key that was presented and is not known answers `invalid_api_key`, as the hosted
    # service does; a missing key answers without a code.
    code = "invalid_api_key" if key else None
    if policy in (Policy.AGENTS, Policy.PROJECT):
        found = await keys.project_key(key)
        if found is None:
            raise Unauthenticated(NEED_PROJECT_KEY, code=code)
        return Principal(Kind.PROJECT, found[0], found[1])
    if policy is Policy.CORE:
        if not await keys.is_core(key):
            raise Unauthenticated(NEED_CORE_KEY, code=code)
        return Principal(Kind.CORE)
    if policy is Policy.CORE_OR_PROJECT:
        principal = await keys.resolve(key)
        if principal.kind is Kind.ANONYMOUS:
            raise Unauthenticated(NEED_PROJECT_KEY, code=code)
        return principal
    if policy is Policy.OPTIONAL and key:
        try:
            return await keys.resolve(key)
        except StorageError:
            return ANONYMOUS
    return ANONYMOUS


class Authenticate:
    """Pure ASGI middleware around one route's app (see the module docstring)."""

    def __init__(self, app: ASGIApp, policy: Policy, keys: Keys) -> None:
        self.app = app
        self.policy = policy
        self._keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = await authenticate(self.policy, self._keys, Request(scope))
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


def guard(routes: Iterable[BaseRoute], keys: Keys) -> None:
    """Wrap every HTTP route of `routes` in `Authenticate` under its path's policy."""
    for route in routes:
        if isinstance(route, Route):
            policy = policy_for(route.path)
            if policy is not Policy.PUBLIC:
                route.app = Authenticate(route.app, policy, keys)


def principal_of(request: Request) -> Principal:
    principal = request.scope.get("state", {}).get("principal")
    if not isinstance(principal, Principal):
        raise RuntimeError(f"{request.url.path} is not guarded by an authentication policy")
    return principal


def project_of(request: Request) -> str:
    """The project whose key the request carries (routes under `AGENTS` or `PROJECT`)."""
    project = principal_of(request).project
    if project is None:
        raise RuntimeError(f"{request.url.path} is not under a project policy")
    return project

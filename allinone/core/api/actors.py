"""Who acted, for audit trails: the id of the key a request carries (`core` for the
Core key). Read after authentication, so the key is known to be valid."""

from __future__ import annotations

from starlette.requests import Request

from allinone.core.api.auth import Kind, bearer, principal_of
from allinone.core.projects import digest_key
from storage import tenancy
from storage.database import Database

CORE_ACTOR = "core"


async def actor_of(request: Request, db: Database) -> str:
    if principal_of(request).kind is Kind.CORE:
        return CORE_ACTOR
    digest = digest_key(bearer(request))
    key_id = await db.read(lambda r: tenancy.key_id_for_digest(r, digest))
    return key_id or "unknown"

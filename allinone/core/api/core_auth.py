"""The Core key check shared by `/core/v1` operator routes.

The Core key (`<data-dir>/secrets/core.key`) is compared by SHA-256 digest, in constant
time, with the digest `credentials.ensure_core_key` stored at start; the key itself is
never stored, logged or echoed.
"""

from __future__ import annotations

import hmac

from starlette.requests import Request

from allinone.core.api.common import digest_key
from allinone.core.errors import Unauthenticated
from allinone.credentials import CORE_KEY_META
from storage import tenancy
from storage.database import Database


async def is_core_key(db: Database, request: Request) -> bool:
    """Whether the request's Bearer token is the Core key."""
    header = request.headers.get("authorization", "")
    presented = header[len("Bearer ") :].strip() if header.startswith("Bearer ") else ""
    if not presented:
        return False
    stored = await db.read(lambda r: tenancy.get_meta(r, CORE_KEY_META))
    return stored is not None and hmac.compare_digest(digest_key(presented), stored)


async def require_core_key(db: Database, request: Request) -> None:
    """Raise a 401 unless the request's Bearer token is the Core key."""
    if not await is_core_key(db, request):
        raise Unauthenticated("A valid Core key is required.")

"""The one place that seals and opens vault credential secrets.

Other Core code that needs a credential for a run calls
`await VaultSecrets.resolve(project_id, credential_id)` and receives the public
description together with the opened secret; it must not log, persist or return the
secret. A credential of another project is reported exactly like a missing one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from allinone.core.errors import CoreError
from allinone.core.sealing import Sealer
from storage import vaults as vault_rows
from storage.database import Database


class CredentialNotFound(CoreError, LookupError):
    """No live credential with that id in that project."""


@dataclass(frozen=True)
class ResolvedCredential:
    """A credential ready for use. `secret` holds the method's secret fields (see
    `allinone.core.credential_auth`); it is excluded from repr so it never lands in a
    log line or traceback by accident."""

    id: str
    vault_id: str
    type: str
    public: dict[str, Any]
    secret: dict[str, Any] = field(repr=False)


class VaultSecrets:
    def __init__(
        self, db: Database, sealer: Sealer, reveal: Callable[[str], None] | None = None
    ) -> None:
        """`reveal` is told every secret value this opens (the log redactor's `add`)."""
        self._db = db
        self._sealer = sealer
        self._reveal = reveal

    @staticmethod
    def _context(project_id: str, credential_id: str) -> str:
        return f"vault_credentials:{project_id}:{credential_id}"

    def seal(self, project_id: str, credential_id: str, secret: dict[str, Any]) -> bytes:
        return self._sealer.seal_json(secret, self._context(project_id, credential_id))

    def open(self, project_id: str, credential_id: str, sealed: bytes) -> dict[str, Any]:
        """Raises `allinone.core.sealing.SealError` if the bytes do not open here."""
        value: dict[str, Any] = self._sealer.open_json(
            bytes(sealed), self._context(project_id, credential_id)
        )
        if self._reveal is not None:
            for field_value in value.values():
                if isinstance(field_value, str):
                    self._reveal(field_value)
        return value

    async def attached(self, project_id: str, vault_ids: list[str]) -> list[dict[str, Any]]:
        """The active credentials of the vaults `vault_ids` (id, vault_id and public
        `auth`; no secret), in vault order."""
        return await self._db.read(
            lambda r: vault_rows.attached_credentials(r, project_id, vault_ids)
        )

    async def resolve(self, project_id: str, credential_id: str) -> ResolvedCredential:
        """The live credential `credential_id` of `project_id`, with its secret opened.

        Raises CredentialNotFound, or SealError when the vault key does not match."""
        row = await self._db.read(
            lambda r: vault_rows.get_credential(r, project_id, None, credential_id)
        )
        if row is None:
            raise CredentialNotFound(credential_id)
        return ResolvedCredential(
            id=row["id"],
            vault_id=row["vault_id"],
            type=row["auth"]["type"],
            public=row["auth"],
            secret=self.open(project_id, credential_id, row["sealed_secret"]),
        )

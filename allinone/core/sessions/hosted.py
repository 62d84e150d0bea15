"""A session's environment: checked before the transaction, bound inside it."""

from __future__ import annotations

from typing import Any

from allinone.core import render
from allinone.core.archive import refuse_archived
from allinone.core.environments import Environments
from allinone.core.errors import InvalidRequest, NotFound
from storage import environments as env_rows
from storage import sessions
from storage.database import Database, Tx

# An existing hosted environment's id, or the inline configuration to create one.
Hosted = tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]] | str


class Binding:
    def __init__(self, db: Database, environments: Environments | None) -> None:
        self._db = db
        self._environments = environments

    async def check_hosted(self, project_id: str, environment: dict[str, Any]) -> Hosted:
        """Validate a hosted environment before the transaction."""
        if self._environments is None:
            raise InvalidRequest("Environments are not available.", "environment.type")
        existing = environment.get("environment_id")
        if existing is not None:
            if set(environment) - {"type", "environment_id"}:
                raise InvalidRequest(
                    "environment_id cannot be combined with other configuration.",
                    "environment.environment_id",
                )
            row = await self._db.read(lambda r: env_rows.get(r, project_id, str(existing)))
            if row is None or row["type"] != "openai_hosted":
                raise NotFound(param="environment.environment_id")
            refuse_archived("environment", row)
            return str(row["id"])
        if environment.get("environment_template_id"):
            raise InvalidRequest(
                "Environment templates cannot be applied in this build yet.",
                "environment.environment_template_id",
                code="unsupported_or_invalid_configuration",
            )
        return await self._environments.hosted_config(project_id, environment, "environment")

    async def bind(
        self,
        tx: Tx,
        project_id: str,
        session_id: str,
        environment: dict[str, Any],
        hosted: Hosted | None,
    ) -> None:
        """Create (or reuse) the session's environment and record it on the session."""
        assert self._environments is not None
        if environment.get("type") == "self_hosted":
            environment_id = await self._environments.insert_self_hosted(
                tx, project_id, environment, "environment"
            )
        elif isinstance(hosted, str):
            environment_id = hosted
        else:
            assert hosted is not None
            environment_id = await self._environments.insert_hosted(tx, project_id, *hosted)
        row = await env_rows.get_any(tx, environment_id)
        assert row is not None
        files = await env_rows.files_of(tx, environment_id)
        await sessions.bind_environment(
            tx, session_id, render.environment(row, files), environment_id
        )

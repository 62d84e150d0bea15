"""Session configuration revisions and their digest.

A session's configuration is what its turns run with: the frozen agent, the session
options (`spend_control`, ...) and the execution settings frozen at creation (the model
provider's public part, the tool policy, the confinement). Its digest is
`agent_versions.config_digest` of the three together, so two turns show different
digests exactly when a `sessions.update` between them changed what they ran.

A turn is pinned to the configuration its Run started with (seed 003: a Run that has
started keeps its version): a turn continued from its checkpoint on a new Run (after a
pause, a restart or a lost Runtime) runs the revision with its digest, `pinned`, whatever
updates came since.
"""

from __future__ import annotations

from typing import Any

from allinone.core.agent_versions import config_digest
from storage import execution_settings, session_revisions
from storage.database import Tx
from storage.rows import Queryable


def session_digest(
    agent: dict[str, Any], options: dict[str, Any] | None, settings: dict[str, Any]
) -> str:
    return config_digest({"agent": agent, "options": options or {}, "settings": settings})


def digest_of(session: dict[str, Any]) -> str:
    """The digest of a stored session's current configuration."""
    return session_digest(
        session["agent"], session.get("options"), execution_settings.settings_of(session)
    )


async def pinned(q: Queryable, session: dict[str, Any], digest: str | None) -> dict[str, Any]:
    """The session as a turn pinned to the configuration `digest` runs: with the agent
    and options of its revision of that digest. The session itself when that is its
    current configuration, or when no revision has that digest (restore validation then
    finds the turn's checkpoint taken with another configuration)."""
    if digest is None or digest == digest_of(session):
        return session
    revision = await session_revisions.with_digest(q, session["id"], digest)
    if revision is None:
        return session
    return {**session, "agent": revision["agent"], "options": revision["options"]}


async def write_first(
    tx: Tx,
    session_id: str,
    agent: dict[str, Any],
    options: dict[str, Any],
    settings: dict[str, Any],
    now: int,
) -> None:
    digest = session_digest(agent, options, settings)
    await session_revisions.insert(tx, session_id, 1, agent, options, digest, now)


async def write_next(
    tx: Tx,
    session: dict[str, Any],
    agent: dict[str, Any],
    options: dict[str, Any],
    now: int,
) -> int:
    """Write the session's next revision (after the row itself was updated)."""
    revision = await session_revisions.next_revision(tx, session["id"])
    digest = session_digest(agent, options, execution_settings.settings_of(session))
    await session_revisions.insert(tx, session["id"], revision, agent, options, digest, now)
    return revision

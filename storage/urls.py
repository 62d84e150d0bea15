"""Which backend a database target names, and URLs fit for a log line. Pure string
functions, so telling an SQLite file from a PostgreSQL URL never loads the PostgreSQL
driver (psycopg and its libpq are imported only when a PostgreSQL database is used)."""

from __future__ import annotations

SCHEMES = ("postgresql://", "postgres://")


def is_url(target: object) -> bool:
    """True when `target` names a PostgreSQL database rather than an SQLite file."""
    return isinstance(target, str) and target.startswith(SCHEMES)


def redact(url: str) -> str:
    """The URL without its password, fit for a log line or an error message."""
    scheme, _, rest = url.partition("://")
    credentials, at, location = rest.rpartition("@")
    if not at:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}@{location}"

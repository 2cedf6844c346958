"""Store URLs (docs/design.md §8): which database, and where.

sqlite:///relative/path.db      a file relative to the current directory
sqlite:////absolute/path.db     an absolute path
postgresql://USER@HOST:5432/DBNAME  a PostgreSQL database (any libpq URL)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from ..credentials import keep_url_secrets, redact_url
from ..errors import ConfigError

DEFAULT_URL = "sqlite:///turnkeeper.db"

FORMS = (
    "sqlite:///relative/path.db, sqlite:////absolute/path.db or postgresql://USER@HOST:5432/DBNAME"
)


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """A parsed store URL: which kind of database (`scheme`) and where it is (`target`)."""

    scheme: Literal["sqlite", "postgresql"]
    target: str
    """The SQLite file path, or the libpq URL for PostgreSQL."""


def parse_url(url: str) -> StoreUrl:
    """Read a store URL; `ConfigError` saying which forms work for anything else."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigError(f"the database URL is empty; use {FORMS}")
    url = url.strip()
    keep_url_secrets(url)  # its password is hidden in every message from now on
    if url.startswith("sqlite:"):
        return _sqlite(url)
    if url.startswith(("postgresql://", "postgres://")):
        return _postgres(url)
    raise ConfigError(f"unsupported database URL {redact_url(url)!r}; use {FORMS}")


def _sqlite(url: str) -> StoreUrl:
    if not url.startswith("sqlite:///"):
        raise ConfigError(f"a SQLite URL takes three slashes before the path: {FORMS}")
    path = url[len("sqlite:///") :]
    if not path or path.endswith("/"):
        raise ConfigError(f"the SQLite URL {url!r} names no file")
    if "?" in path or "#" in path:
        raise ConfigError(f"the SQLite URL {url!r} takes no query or fragment")
    return StoreUrl("sqlite", path)


def _postgres(url: str) -> StoreUrl:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError as e:
        raise ConfigError(f"the PostgreSQL URL {redact_url(url)!r} is malformed: {e}") from e
    if not parts.hostname:
        raise ConfigError(f"the PostgreSQL URL {redact_url(url)!r} names no host")
    if parts.path in ("", "/"):
        raise ConfigError(f"the PostgreSQL URL {redact_url(url)!r} names no database")
    return StoreUrl("postgresql", url)

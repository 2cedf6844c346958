from __future__ import annotations

import pytest

from turnkeeper.errors import ConfigError
from turnkeeper.store import DEFAULT_URL, parse_url


def test_the_forms_of_architecture_8() -> None:
    assert parse_url("sqlite:///relative/path.db").target == "relative/path.db"
    assert parse_url("sqlite:////absolute/path.db").target == "/absolute/path.db"
    pg = parse_url("postgresql://user@host:5432/db")
    assert (pg.scheme, pg.target) == ("postgresql", "postgresql://user@host:5432/db")
    assert parse_url(DEFAULT_URL).target == "turnkeeper.db"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("", "empty"),
        ("mysql://x/y", "unsupported"),
        ("turnkeeper.db", "unsupported"),
        ("sqlite://relative.db", "three slashes"),
        ("sqlite:///", "names no file"),
        ("sqlite:///a.db?mode=ro", "no query"),
        ("postgresql://host:notaport/db", "malformed"),
        ("postgresql:///db", "no host"),
        ("postgresql://host:5432", "no database"),
    ],
)
def test_anything_else_is_a_clear_config_error(url: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_url(url)


def test_passwords_are_not_echoed() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_url("postgresql://u:secret@host:bad/db")
    assert "secret" not in str(raised.value)

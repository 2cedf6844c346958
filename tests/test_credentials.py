"""Credentials in URLs are hidden by one function before anything is written or logged."""

from __future__ import annotations

import base64
import io
import logging

import pytest

from turnkeeper.credentials import (
    RedactingFilter,
    keep_secret,
    keep_url_secrets,
    redact_text,
    redact_url,
)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:secret@host:8080/v1", "http://user:***@host:8080/v1"),
        ("postgresql://bob:p%40ss@db/app", "postgresql://bob:***@db/app"),
        ("https://h/v1?api-key=abc&x=1", "https://h/v1?api-key=%2A%2A%2A&x=1"),
        ("https://h/v1?token=abc", "https://h/v1?token=%2A%2A%2A"),
        ("http://user@host/v1", "http://user@host/v1"),
        ("http://host:8080/v1", "http://host:8080/v1"),
        ("http://u:secret@host:notaport/x", "http://***@host:notaport/x"),
        ("sqlite:///turnkeeper.db", "sqlite:///turnkeeper.db"),
    ],
)
def test_a_url_keeps_everything_but_its_credentials(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "secret" not in redact_url(url)


def test_urls_inside_text_and_libpq_passwords_are_hidden() -> None:
    text = (
        "upstream http://u:secret@h/v1 failed; also 'https://x:secret@y' and "
        "host=db password=secret user=x"
    )
    redacted = redact_text(text)
    assert "secret" not in redacted
    assert redacted.startswith("upstream http://u:***@h/v1 failed")
    assert "password=***" in redacted


def test_the_log_filter_redacts_messages_and_tracebacks() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("turnkeeper.test_credentials")
    logger.addHandler(handler)
    try:
        logger.warning("calling %s", "http://u:secret@h/v1")
        try:
            raise RuntimeError("could not reach http://u:secret@h/v1")
        except RuntimeError:
            logger.exception("the call failed")
    finally:
        logger.removeHandler(handler)
    written = stream.getvalue()
    assert "http://u:***@h/v1" in written
    assert "could not reach" in written, "the traceback is kept, redacted"
    assert "secret" not in written


def test_kept_secrets_are_hidden_wherever_they_stand_in_text() -> None:
    keep_secret("sk-kept-0123456789abcdef", "short")
    keep_url_secrets("http://alice:pa%40ss-word@proxy.example:8080/v1?api_key=q-key-987654")
    basic = base64.b64encode(b"alice:pa@ss-word").decode()
    text = (
        f"invalid key sk-kept-0123456789abcdef; sent Basic {basic}; password pa@ss-word "
        "(pa%40ss-word); query key q-key-987654; a short word stays short"
    )
    redacted = redact_text(text)
    assert redacted == (
        "invalid key ***; sent Basic ***; password *** (***); query key ***; "
        "a short word stays short"
    )


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("x-api-key: abc123 was refused", "x-api-key: *** was refused"),
        ('{"Authorization": "Bearer tok-1"}', '{"Authorization": "Bearer ***"}'),
        ("authorization=Basic dXNlcjpwdw==, next", "authorization=Basic ***, next"),
        ("the authorization_error was raised", "the authorization_error was raised"),
    ],
)
def test_credential_header_values_are_hidden_even_when_not_kept(text: str, shown: str) -> None:
    assert redact_text(text) == shown


@pytest.mark.parametrize(
    "text",
    [
        "calling http://u:secret@h/v1?api-key=abc&x=1 failed: Authorization: Bearer tok-123",
        'x-api-key: abc123; {"authorization": "Basic dXNlcjpwdw=="}',
    ],
)
def test_redacting_twice_changes_nothing(text: str) -> None:
    once = redact_text(text)
    assert "secret" not in once
    assert redact_text(once) == once

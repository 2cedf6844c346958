"""The one clock an SDK's attempts share: retry waits that fit, and what each attempt saw."""

from __future__ import annotations

import httpx2
import pytest

from turnkeeper.errors import ProviderFailed, ProviderUnavailable
from turnkeeper.providers.attempts import Attempts, retry_after, unavailable_status


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def response(status: int, retry: int = 0, after: str | None = None) -> httpx2.Response:
    headers = {} if after is None else {"retry-after": after}
    request = httpx2.Request(
        "POST", "http://127.0.0.1/v1", headers={"x-stainless-retry-count": str(retry)}
    )
    return httpx2.Response(status, headers=headers, request=request)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "0"}, None),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_reads_what_the_sdks_read(
    headers: dict[str, str], seconds: float | None
) -> None:
    assert retry_after(httpx2.Headers(headers)) == seconds


def test_a_retry_fits_only_if_the_wait_leaves_time_for_an_attempt() -> None:
    clock = FakeClock()
    attempts = Attempts(deadline=110.0, max_retries=2, min_attempt=1.0, clock=clock)
    assert attempts.retry_fits(response(429, after="8"))
    assert not attempts.retry_fits(response(429, after="9.5"))
    clock.now = 109.0
    assert not attempts.retry_fits(response(500))  # 0.5 s backoff leaves 0.5 s
    clock.now = 108.5
    assert attempts.retry_fits(response(500))
    assert not attempts.retry_fits(response(500, retry=1))  # backoff doubles to 1 s
    assert attempts.retry_fits(response(500, retry=2))  # the SDK's own last attempt


def test_errors_name_the_last_response_and_the_attempts() -> None:
    attempts = Attempts(deadline=1.0, max_retries=2, sent=3, status=503, request_id="req_9")
    error = attempts.error(ProviderUnavailable, "down")
    assert (str(error), error.status, error.request_id) == ("down (3 attempts)", 503, "req_9")
    failed = attempts.status_error("bad", 404, None)
    assert isinstance(failed, ProviderFailed)
    assert (failed.status, failed.request_id) == (404, "req_9")
    assert isinstance(attempts.status_error("odd", 200, "r", unavailable=True), ProviderUnavailable)


@pytest.mark.parametrize(
    ("status", "unavailable"),
    [
        (408, True),
        (429, True),
        (500, True),
        (529, True),
        (400, False),
        (401, False),
        (404, False),
        (None, False),
    ],
)
def test_which_statuses_mean_not_now(status: int | None, unavailable: bool) -> None:
    assert unavailable_status(status) is unavailable

"""Reports: one structured record per reported exit, in the logs and in Sentry."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pytest
import sentry_sdk
from sentry_sdk.envelope import Envelope
from sentry_sdk.transport import Transport

from tests.scripts import answer, asks, body, tool_use, usage
from turnkeeper import ScriptedProvider, TurnSetting, run_turn
from turnkeeper.budget import Budget
from turnkeeper.credentials import keep_secret, redact_logs
from turnkeeper.observe.logs import JsonFormatter
from turnkeeper.observe.report import Report, report


async def reported(
    responses: list[dict[str, Any]], caplog: pytest.LogCaptureFixture, **kwargs: Any
) -> list[logging.LogRecord]:
    with caplog.at_level(logging.INFO, logger="turnkeeper"):
        await run_turn(
            "q",
            provider=ScriptedProvider(responses),
            setting=TurnSetting(turn_id="t_rep", conversation_id="c_rep"),
            **kwargs,
        )
    return [r for r in caplog.records if r.name == "turnkeeper.report"]


async def test_a_reported_exit_is_one_record_with_every_field(
    caplog: pytest.LogCaptureFixture,
) -> None:
    last = body([], "max_tokens", usage=usage(1_000, 2_000), model="claude-sonnet-4-5")
    [record] = await reported([last], caplog)
    assert record.levelno == logging.WARNING
    fields: dict[str, Any] = record.turnkeeper  # type: ignore[attr-defined]
    assert fields["turn_id"] == "t_rep"
    assert fields["conversation_id"] == "c_rep"
    assert fields["outcome"] == "truncated"
    assert fields["stop_reason"] == "max_tokens"
    assert fields["iteration"] == 1
    assert fields["elapsed"] >= 0
    assert fields["usage"]["input_tokens"] == 1_000
    # 1000 * $3 + 2000 * $15 per million
    assert fields["cost_usd"] == pytest.approx(0.033)


async def test_a_finished_turn_is_not_reported(caplog: pytest.LogCaptureFixture) -> None:
    assert await reported([answer("fine")], caplog) == []


async def test_a_refusal_is_reported_at_info(caplog: pytest.LogCaptureFixture) -> None:
    [record] = await reported([body([], "refusal")], caplog)
    assert record.levelno == logging.INFO
    assert record.turnkeeper["outcome"] == "refused"  # type: ignore[attr-defined]


async def test_the_iteration_cap_is_reported_with_its_iteration(
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = [asks(tool_use("x")), asks(tool_use("x"))]
    [record] = await reported(script, caplog, budget=Budget(max_iterations=2))
    assert record.turnkeeper["outcome"] == "iteration_limit"  # type: ignore[attr-defined]
    assert record.turnkeeper["iteration"] == 2  # type: ignore[attr-defined]


def test_a_json_log_line_carries_the_reports_fields(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="turnkeeper"):
        report(Report("t_1", 3, "time_limit", "out of time", conversation_id="c_1", elapsed=2.5))
    [record] = caplog.records
    line = json.loads(JsonFormatter().format(record))
    assert line["level"] == "WARNING"
    assert line["logger"] == "turnkeeper.report"
    assert "out of time" in line["message"]
    assert line["turn_id"] == "t_1"
    assert line["conversation_id"] == "c_1"
    assert line["outcome"] == "time_limit"
    assert line["iteration"] == 3
    assert line["elapsed"] == 2.5


def test_a_json_log_line_is_redacted_message_traceback_and_fields() -> None:
    """Behind `redact_logs()`, as in serve and worker: no password of a URL or a DSN in the
    message, the traceback or a report's fields, and the line stays one JSON object."""
    url = "http://user:PASSWORD1@model.test/v1?api-key=KEY2"
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    redact_logs([handler])
    logger = logging.getLogger("turnkeeper.test_json_redaction")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            raise ConnectionError(f"{url} refused; dsn host=db password=PASSWORD3")
        except ConnectionError:
            logger.exception("the call to %s failed", url)
        failure = Report("t_1", 1, "failed", f"{url} failed", details={"url": [url]})
        logger.error("reported", extra={"turnkeeper": failure.as_dict()})
    finally:
        logger.removeHandler(handler)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert len(lines) == 2
    assert "http://user:***@model.test" in lines[0]["message"]
    assert "ConnectionError" in lines[0]["exception"]
    assert lines[1]["details"] == {"url": ["http://user:***@model.test/v1?api-key=%2A%2A%2A"]}
    written = stream.getvalue()
    assert not any(s in written for s in ("PASSWORD1", "KEY2", "PASSWORD3")), written


class Captured(Transport):
    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self.events: list[dict[str, Any]] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        event = envelope.get_event()
        if event is not None:
            self.events.append(dict(event))


@pytest.fixture
def sentry() -> Any:
    transport = Captured()
    sentry_sdk.init(
        dsn="http://public@127.0.0.1:9/1",
        transport=transport,
        default_integrations=False,
        auto_enabling_integrations=False,
    )
    try:
        yield transport
    finally:
        sentry_sdk.get_client().close()
        sentry_sdk.get_global_scope().set_client(None)


def test_without_sentry_set_up_nothing_is_sent() -> None:
    from turnkeeper.observe.report import to_sentry

    assert not sentry_sdk.get_client().is_active()
    assert to_sentry(Report("t_1", 1, "failed", "boom")) is False


def test_warnings_and_errors_go_to_sentry_with_their_fields(sentry: Captured) -> None:
    report(Report("t_1", 2, "failed", "boom", level=logging.ERROR, conversation_id="c_1"))
    report(Report("t_2", 1, "refused", "the model refused", level=logging.INFO))
    sentry_sdk.flush()
    [event] = sentry.events
    assert event["level"] == "error"
    assert "boom" in event["message"]
    assert event["tags"]["turnkeeper.outcome"] == "failed"
    assert event["contexts"]["turnkeeper"]["conversation_id"] == "c_1"


def test_a_report_is_redacted_before_it_is_logged_or_sent(
    sentry: Captured, caplog: pytest.LogCaptureFixture
) -> None:
    """Whatever made its text (a tool's exception, the job's): a kept secret goes nowhere."""
    secret = "sk-report-SECRET-0123456789"
    keep_secret(secret)
    failure = f"RuntimeError: upstream refused key {secret}"
    with caplog.at_level(logging.ERROR, logger="turnkeeper.report"):
        report(Report("t_1", 1, "failed", failure, logging.ERROR, details={"exception": [failure]}))
    sentry_sdk.flush()
    [event] = sentry.events
    [record] = caplog.records
    assert record.getMessage() == (
        "turn t_1 iteration 1: failed: RuntimeError: upstream refused key ***"
    )
    assert record.__dict__["turnkeeper"]["details"] == {
        "exception": ["RuntimeError: upstream refused key ***"]
    }
    sent = json.dumps(event, default=str)
    assert "upstream refused key ***" in sent
    assert secret not in sent

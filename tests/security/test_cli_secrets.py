"""The CLI prints no secret: not a model server's error that echoes the key (`run`), nor a
database URL's password (`trace show`). Each command runs in a process of its own, so
nothing this test process was configured with helps it hide them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.databases import fresh_schema
from tests.providers.wire_server import json_response, serving
from turnkeeper.store import open_store

from .test_secrets import API_KEY, ECHOED, PASSWORD, assert_no_secret

REPO = Path(__file__).resolve().parents[2]


def turnkeeper(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "turnkeeper", *args]
    environ = {**os.environ, **(env or {})}
    return subprocess.run(
        command, cwd=REPO, env=environ, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("provider", "variables"),
    [
        ("anthropic", ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")),
        ("openai", ("OPENAI_API_KEY", "OPENAI_BASE_URL")),
    ],
)
def test_run_prints_and_traces_no_key_a_server_echoes(
    tmp_path: Path, provider: str, variables: tuple[str, str]
) -> None:
    trace = tmp_path / "trace.json"
    with serving(json_response(ECHOED, 401, echo=True)) as server:
        base = server.url if provider == "anthropic" else f"{server.url}/v1"
        env = dict(zip(variables, (API_KEY, base), strict=True))
        done = turnkeeper(
            "run", "--provider", provider, "--trace", str(trace), "--json", "hi", env=env
        )
        sent = " ".join(v for r in server.requests for v in r.headers.values())
    assert API_KEY in sent, "the key was sent, so the server could echo it"
    assert done.returncode == 1, done.stderr  # the turn failed: `run` says so
    assert json.loads(done.stdout)["status"] == "failed"
    assert "invalid key" in done.stderr, "the failure is reported, redacted"
    for what, text in {
        "the printed state": done.stdout,
        "the printed report": done.stderr,
        "the trace": trace.read_text(),
    }.items():
        assert_no_secret(what, text)


def test_trace_show_does_not_print_an_unreachable_databases_password() -> None:
    done = turnkeeper(
        "trace", "show", "t_0", "--database", f"postgresql://user:{PASSWORD}@127.0.0.1:1/x"
    )
    assert done.returncode == 2
    assert "cannot connect to PostgreSQL at postgresql://user:***@127.0.0.1:1/x" in done.stderr
    assert_no_secret("the error", done.stdout + done.stderr)


async def migrated(url: str) -> None:
    await (await open_store(url)).close()


@pytest.mark.postgres
def test_trace_show_does_not_print_the_password_of_a_store_without_the_turn(
    postgres_database: str,
) -> None:
    with fresh_schema(postgres_database) as url:  # trust authentication: any password will do
        with_password = url.replace("://postgres@", f"://postgres:{PASSWORD}@", 1)
        assert with_password != url
        asyncio.run(migrated(url))  # a store, without that turn
        done = turnkeeper("trace", "show", "t_0", "--database", with_password)
    assert done.returncode == 2
    assert "has no turn t_0" in done.stderr
    assert "postgres:***@127.0.0.1" in done.stderr
    assert_no_secret("the error", done.stdout + done.stderr)

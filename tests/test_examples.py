"""The examples in examples/ run as a reader would run them, offline."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import psycopg

from tests.test_server import free_port

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(*command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, env=env, cwd=EXAMPLES.parent
    )


def test_a_library_turn_with_a_tool() -> None:
    done = run(sys.executable, str(EXAMPLES / "library_turn.py"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "tool said: ['Madrid: sunny for the next 2 days']",
        "outcome: finished",
        "answer: Sunny in Madrid for the next two days.",
    ]


def test_a_served_turn_with_an_mcp_server() -> None:
    done = run(sys.executable, str(EXAMPLES / "served_turn_mcp.py"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        "answer: The time server answered for Asia/Tokyo.  (finished)"
    )


def test_scale_out_on_postgresql(postgres_database: str) -> None:
    name = f"turnkeeper_example_{secrets.token_hex(4)}"
    url = urlsplit(postgres_database)._replace(path=f"/{name}").geturl()
    environ = {
        **os.environ,
        "TURNKEEPER_DATABASE_URL": url,
        "PORT": str(free_port()),
        "TURNKEEPER": f"{sys.executable} -m turnkeeper",
        "PYTHON": sys.executable,
    }
    try:
        done = run("bash", str(EXAMPLES / "scale_out.sh"), env=environ)
    finally:
        with psycopg.connect(postgres_database, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "your todos: write tests"

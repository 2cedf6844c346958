"""A missing extra is one line with the command that installs it from the checkout, exit 2.

Each case runs the CLI in a subprocess where the extra's modules cannot be
imported, as on a machine where it was never installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts import body, text

HIDE = """
import sys
from importlib.abc import MetaPathFinder

class Missing(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

HIDDEN = set(sys.argv[1].split(","))
sys.meta_path.insert(0, Missing())
from turnkeeper.cli import main
sys.exit(main(sys.argv[2:]))
"""

NOWHERE = "postgresql://postgres@127.0.0.1:9/turnkeeper"
"""Never reached: the extra is missing before any connection is tried."""


def cli_without(hidden: list[str], argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    environ |= {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ANTHROPIC_API_KEY": "sk-test"}
    return subprocess.run(
        [sys.executable, "-c", HIDE, ",".join(hidden), *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=environ,
    )


@pytest.mark.parametrize(
    ("hidden", "argv", "extra"),
    [
        (["anthropic", "httpx2"], ["run", "--provider", "anthropic", "q"], "anthropic"),
        (["openai", "httpx2"], ["run", "--provider", "openai", "q"], "openai"),
        (["openai", "httpx2"], ["serve", "--provider", "openai", "--port", "9"], "openai"),
        (["openai"], ["run", "--provider", "openai", "q"], "openai"),
        (["mcp", "mcp_types"], ["run", "--script", "s.json", "--mcp-stdio", "x", "q"], "mcp"),
        (
            ["psycopg", "psycopg_pool", "procrastinate"],
            ["serve", "--database", NOWHERE, "--port", "9"],
            "postgres",
        ),
        (
            ["psycopg", "psycopg_pool", "procrastinate"],
            ["worker", "--database", NOWHERE],
            "postgres",
        ),
        (["uvicorn", "starlette"], ["serve", "--port", "9"], "server"),
        (["prometheus_client"], ["serve", "--port", "9"], "server"),
    ],
)
def test_a_missing_extra_is_one_line_naming_the_install_command(
    tmp_path: Path, hidden: list[str], argv: list[str], extra: str
) -> None:
    (tmp_path / "s.json").write_text(json.dumps([body([text("hi")], "end_turn")]))
    done = cli_without(hidden, argv, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"pip install -e '.[{extra}]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_tracing_without_the_otel_extra_names_the_install_command(tmp_path: Path) -> None:
    """Spans are made only when the otel extra is there; asked for without it, the error
    says how to install it, as every missing extra does."""
    script = HIDE.replace(
        "from turnkeeper.cli import main\nsys.exit(main(sys.argv[2:]))",
        "import turnkeeper.observe.telemetry",
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "opentelemetry"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "MissingExtra: tracing needs the otel extra: pip install -e '.[otel]'" in done.stderr


@pytest.mark.parametrize(
    ("provider", "key", "extra"),
    [("anthropic", "ANTHROPIC_API_KEY", "anthropic"), ("openai", "OPENAI_API_KEY", "openai")],
)
@pytest.mark.parametrize("command", ["run", "serve"])
def test_a_missing_key_and_a_missing_extra_are_said_together(
    tmp_path: Path, provider: str, key: str, extra: str, command: str
) -> None:
    """One answer for both: the key to export and the extra to install."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    argv = [command, "--provider", provider, *(["q"] if command == "run" else ["--port", "9"])]
    done = subprocess.run(
        [sys.executable, "-c", HIDE, f"{provider},httpx2", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=environ,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert key in done.stderr
    assert f"pip install -e '.[{extra}]'" in done.stderr


BASE_INSTALL_LACKS = [
    "uvicorn",
    "starlette",
    "prometheus_client",
    "psycopg",
    "psycopg_pool",
    "procrastinate",
    "anthropic",
    "openai",
    "mcp",
    "httpx2",
]
"""What `pip install -e .` alone leaves out (every extra's modules)."""


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["serve", "--port", "9"], "turnkeeper serve needs the server extra"),
        (["worker", "--database", NOWHERE], "turnkeeper worker needs the postgres extra"),
        (["worker"], "turnkeeper worker needs the postgres extra"),
    ],
)
def test_with_only_the_base_install_each_command_names_the_extra_it_needs(
    tmp_path: Path, argv: list[str], says: str
) -> None:
    """Not "metrics needs the server extra": the command, and the extra that installs it."""
    done = cli_without(BASE_INSTALL_LACKS, argv, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert says in done.stderr
    assert "metrics" not in done.stderr


def test_asgi_without_the_server_extra_raises_missing_extra(tmp_path: Path) -> None:
    """Not a raw `No module named 'starlette'`: turnkeeper's MissingExtra, naming the extra."""
    script = HIDE.replace(
        "from turnkeeper.cli import main\nsys.exit(main(sys.argv[2:]))",
        "from turnkeeper import Assistant\n"
        "from turnkeeper.errors import MissingExtra\n"
        "try:\n"
        "    Assistant().asgi()\n"
        "except MissingExtra as e:\n"
        "    print(e)\n",
    )
    for hidden in ("starlette", "prometheus_client", ",".join(BASE_INSTALL_LACKS)):
        done = subprocess.run(
            [sys.executable, "-c", script, hidden],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == (
            "Assistant.asgi() needs the server extra: pip install -e '.[server]' "
            "in turnkeeper's checkout\n"
        )

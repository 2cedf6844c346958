"""`turnkeeper serve` and `worker` refuse unusable configuration with one line and exit 2."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from turnkeeper.cli import main

TIME_SERVER = f"{sys.executable} -m mcp_server_time --local-timezone UTC"


def on_a_free_port(argv: list[str]) -> list[str]:
    """`serve` claims its port before it opens anything else: a free one, so what these
    tests check is not hidden by whatever listens on 8000 on the machine."""
    if argv[0] != "serve":
        return argv
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return [*argv, "--port", str(port)]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["serve", "--database", "mysql://x/y"], "unsupported database URL"),
        (["worker"], "needs a PostgreSQL database"),
        (["worker", "--database", "sqlite:///x.db"], "needs a PostgreSQL database"),
        (["serve", "--provider", "anthropic"], "ANTHROPIC_API_KEY is not set"),
        (["serve", "--mcp-stdio", "/nonexistent/mcp-server"], "could not start"),
        (["serve", "--mcp-stdio", TIME_SERVER, "--mcp-stdio", TIME_SERVER], "get_current_time"),
    ],
)
def test_unusable_configuration_exits_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(on_a_free_port(argv)) == 2
    assert says in capsys.readouterr().err


def test_the_database_url_can_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TURNKEEPER_DATABASE_URL", "redis://nope")
    assert main(["serve"]) == 2
    assert "redis://nope" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "70000", "http"])
def test_a_bad_port_is_an_argument_error(value: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--port", value])
    assert exited.value.code == 2


@pytest.mark.parametrize("command", ["serve", "worker"])
@pytest.mark.parametrize(
    ("url", "cause"),
    [
        ("postgresql://postgres@127.0.0.1:9/turnkeeper", "Connection refused"),
        ("postgresql://no_such_role@127.0.0.1:5432/postgres", 'role "no_such_role" does not exist'),
        ("postgresql://postgres@127.0.0.1:5432/no_such_db", 'database "no_such_db" does not exist'),
    ],
)
def test_a_database_that_refuses_the_connection_is_one_line_naming_the_cause(
    postgres_database: str, command: str, url: str, cause: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(on_a_free_port([command, "--database", url])) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"turnkeeper: error: cannot connect to PostgreSQL at {url}: ")
    assert cause in err
    assert err.count("\n") == 1, err


def test_cors_origins_are_repeatable_and_reach_the_server_settings() -> None:
    from turnkeeper.cli import build_parser
    from turnkeeper.cli.serving import _settings

    args = build_parser().parse_args(
        ["serve", "--cors-origin", "https://a.example", "--cors-origin", "http://localhost:3000"]
    )
    assert _settings(args).cors_origins == ("https://a.example", "http://localhost:3000")
    assert _settings(build_parser().parse_args(["serve"])).cors_origins == ()


def test_cors_credentials_and_headers_reach_the_server_settings() -> None:
    from turnkeeper.cli import build_parser
    from turnkeeper.cli.serving import _settings

    argv = ["serve", "--cors-origin", "https://a.example", "--cors-credentials"]
    settings = _settings(build_parser().parse_args([*argv, "--cors-header", "X-User"]))
    default = _settings(build_parser().parse_args(["serve"]))
    assert (settings.cors_credentials, settings.cors_headers) == (True, ("x-user",))
    assert (default.cors_credentials, default.cors_headers) == (False, ())


def test_cors_credentials_without_an_origin_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["serve", "--cors-credentials"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("turnkeeper: error: --cors-credentials needs --cors-origin ORIGIN")
    assert "\n" not in err


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        *(("--cors-origin", v, "is not an origin") for v in ("*", "https://a.example/")),
        *(("--cors-origin", v, "is not an origin") for v in ("a.example", "https://a.example/x")),
        *(("--keep-alive", v, "is not a positive whole number") for v in ("0", "-5", "1.5", "x")),
        *(("--max-streams", v, "is not a positive whole number") for v in ("0", "x")),
        *(("--max-streams-per-user", v, "is not a positive whole number") for v in ("-1", "")),
        *(("--cors-header", v, "is not an HTTP header name") for v in ("x user", "x:y", "")),
    ],
)
def test_a_value_an_option_cannot_take_is_an_argument_error(
    option: str, value: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", option, value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert option in err
    assert says in err


def test_frame_ancestors_and_public_metrics_reach_the_server_settings() -> None:
    from turnkeeper.cli import build_parser
    from turnkeeper.cli.serving import _settings

    argv = ["serve", "--frame-ancestors", "https://a.example", "--frame-ancestors", "https://b.io"]
    settings = _settings(build_parser().parse_args([*argv, "--public-metrics"]))
    default = _settings(build_parser().parse_args(["serve", "--metrics-port", "9100"]))
    assert settings.frame_ancestors == ("https://a.example", "https://b.io")
    assert settings.public_metrics is True
    assert (default.frame_ancestors, default.public_metrics) == ((), False)
    assert default.metrics_port == 9100


def test_a_port_in_use_is_one_line_and_exit_2_before_the_banner(tmp_path: Path) -> None:
    """As every other startup error: no banner announcing an address it cannot serve, no
    uvicorn error after it."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        environ = {
            k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))
        }
        done = subprocess.run(
            [sys.executable, "-m", "turnkeeper", "serve", "--port", str(busy)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env=environ | {"TURNKEEPER_PROVIDER": "demo"},
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"turnkeeper: error: port {busy} is in use on 127.0.0.1: stop what listens there, "
        "or choose another with --port\n"
    )
    assert not (tmp_path / "turnkeeper.db").exists(), "nothing opened before the port is had"


@pytest.mark.parametrize(
    "argv", [["worker"], ["serve", "--no-worker"], ["serve", "--database", "mysql://x/y"]]
)
def test_hints_name_the_postgresql_url_form_unredacted(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The form survives the redaction every error line goes through: no `***@host:port`."""
    assert main(on_a_free_port(argv)) == 2
    err = capsys.readouterr().err
    assert "postgresql://USER@HOST:5432/DBNAME" in err
    assert "***" not in err


def test_the_stream_caps_reach_the_settings_and_the_app(tmp_path: Path) -> None:
    from turnkeeper import Assistant
    from turnkeeper.cli import build_parser
    from turnkeeper.cli.serving import _settings
    from turnkeeper.observe.metrics import Metrics
    from turnkeeper.serving.server import Service, http_app
    from turnkeeper.store.sqlite import SqliteStore

    argv = ["serve", "--max-streams", "7", "--max-streams-per-user", "3"]
    settings = _settings(build_parser().parse_args(argv))
    default = _settings(build_parser().parse_args(["serve"]))
    assert (settings.max_streams, settings.max_streams_per_user) == (7, 3)
    assert (default.max_streams, default.max_streams_per_user) == (2000, 20)
    service = Service(SqliteStore(tmp_path / "t.db"), None, Metrics())  # type: ignore[arg-type]
    admission = http_app(service, settings, Assistant(), None).state.admission
    assert (admission.most, admission.per_reader) == (7, 3)
    mounted = Assistant().asgi(database="sqlite:///x.db", max_streams=9, max_streams_per_user=2)
    assert (mounted.settings.max_streams, mounted.settings.max_streams_per_user) == (9, 2)

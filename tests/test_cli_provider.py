"""`turnkeeper run --provider` against the wire server, configured by the SDKs' own variables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.providers.wire_server import WireServer, recording, replayed
from turnkeeper.cli import main

ANTHROPIC_TEXT = "vercel__ai/anthropic__anthropic-text.json"
OPENAI_TOOL_CALL = "vercel__ai/xai__xai-tool-call.json"
OPENAI_TEXT = "vercel__ai/openai__chat__openai-text.json"


@pytest.mark.parametrize(
    ("provider", "variable"), [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")]
)
def test_a_missing_key_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], provider: str, variable: str
) -> None:
    assert main(["run", "--provider", provider, "q"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert variable in err
    assert "Traceback" not in err


def test_script_and_provider_exclude_each_other(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--provider", "demo", "--script", str(tmp_path / "s.json"), "q"])
    assert exited.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_anthropic_through_its_base_url(
    server: WireServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    server.add(replayed(ANTHROPIC_TEXT))
    assert main(["run", "--provider", "anthropic", "--model", "claude-x", "--json", "hello"]) == 0
    state = json.loads(capsys.readouterr().out)
    answer = recording(ANTHROPIC_TEXT)["response"]["body"]["content"][0]["text"]
    assert state["status"] == "finished"
    assert state["messages"][-1] == {"id": "m2", "role": "bot", "text": answer}
    (sent,) = server.requests
    assert sent.body["model"] == "claude-x"
    assert any("test-key" in v for v in sent.headers.values())  # the key from ANTHROPIC_API_KEY


def test_openai_compatible_server_with_trace_and_replay(
    server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")  # a local server needs no key
    server.add(replayed(OPENAI_TOOL_CALL), replayed(OPENAI_TEXT))
    trace = tmp_path / "t.json"
    argv = ["run", "--provider", "openai", "--model", "local", "--json", "--trace", str(trace)]
    assert main([*argv, "--root", str(tmp_path), "weather?"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["status"] == "finished"
    assert state["usage"]["iterations"] == 2
    assert json.loads(trace.read_text())["wire"] == "openai"
    assert len(server.requests) == 2

    assert main(["replay", str(trace)]) == 0
    assert "replay matches: 2 model calls, outcome finished" in capsys.readouterr().out
    assert len(server.requests) == 2  # replay is offline
    assert main(["trace", "show", "--json", str(trace)]) == 0
    rows = json.loads(capsys.readouterr().out)["iterations"]
    assert [r["input_tokens"] for r in rows] == [291, 16]

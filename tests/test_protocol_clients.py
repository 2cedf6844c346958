"""The protocols proven with their real clients (issue 29): `@ag-ui/client`'s HttpAgent and
the `ai` package's DefaultChatTransport / readUIMessageStream, run by Node
(`tests/clients/*.mjs`) against a served assistant whose fake model streams
with gaps, on the embedded default and with a worker on PostgreSQL."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fake_model import FakeModelServer
from tests.scripts import answer, asks, body, text, tool_use
from tests.test_resume import APP, served
from tests.test_server import output, turnkeeper

CLIENTS = Path(__file__).resolve().parent / "clients"

pytestmark = pytest.mark.skipif(
    not os.environ.get("CI")
    and (shutil.which("node") is None or not (CLIENTS / "node_modules").is_dir()),
    reason="the protocol clients need node and `npm ci` in tests/clients",
)


class Served:
    def __init__(self, base: str, model: FakeModelServer, logs: list[Path]) -> None:
        self.base = base
        self.model = model
        self.logs = logs

    def node(self, scenario: str, *args: str, bound: float = 60) -> dict[str, Any]:
        """Run `tests/clients/<scenario>.mjs <base>`; its JSON output."""
        done = subprocess.run(
            ["node", str(CLIENTS / f"{scenario}.mjs"), self.base, *args],
            capture_output=True,
            timeout=bound,
            cwd=CLIENTS,
            check=False,
        )
        logs = "\n".join(output(log)[-3000:] for log in self.logs)
        assert done.returncode == 0, f"{done.stderr.decode()}\n{logs}"
        lines = done.stdout.decode().strip().splitlines()
        assert lines, f"no output: {done.stderr.decode()}\n{logs}"
        found: dict[str, Any] = json.loads(lines[-1])
        return found


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def app(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("protocols")
    with ExitStack() as stack:
        if request.param == "postgres":
            from tests.databases import fresh_schema, test_database

            url = stack.enter_context(fresh_schema(stack.enter_context(test_database())))
        else:
            url = f"sqlite:///{tmp / 'chat.db'}"
        model = stack.enter_context(FakeModelServer([], gap=0.02))
        env = {
            **os.environ,
            "ANTHROPIC_API_KEY": "sk-test-not-real",
            "ANTHROPIC_BASE_URL": model.url,
        }
        base, (process, log) = served(stack, url, env, tmp)
        logs = [log]
        if request.param == "postgres":
            worker_log = tmp / "worker.log"
            stack.enter_context(
                turnkeeper("worker", *APP, "--database", url, log=worker_log, env=env)
            )
            logs.append(worker_log)
        _until_up(base, process, log)
        yield Served(base, model, logs)


def _until_up(base: str, process: Any, log: Path, bound: float = 120) -> None:
    """Until `serve` answers (bounded: a loaded machine starts it slowly)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the server exited: {output(log)}"
        try:
            if httpx.get(f"{base}/openapi.json", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"serve did not answer within {bound} s: {output(log)}")


LONG = " ".join(f"word{n}" for n in range(40))
LONGER = " ".join(f"word{n}" for n in range(200))


def _spanish(text: str) -> bool:
    from turnkeeper.i18n import Catalogs

    catalog = Catalogs().catalog("es")
    return text in catalog.values() and text not in Catalogs().catalog("en").values()


# ---- AG-UI: @ag-ui/client's HttpAgent, its event verification on ------------------------


def test_ag_ui_text(app: Served) -> None:
    app.model.script = [answer("Hello there, reader.")]
    got = app.node("ag_ui_text")
    assert got["error"] is None, got
    assert got["types"][0] == "RUN_STARTED"
    assert got["types"][1:4] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
    ]
    assert got["types"][-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert got["text"] == "Hello there, reader."
    assert got["token"] is True
    assert got["messages"][-1] == {"role": "assistant", "content": "Hello there, reader."}


def test_ag_ui_tool(app: Served) -> None:
    app.model.script = [asks(tool_use("look_up", {"query": "tea"})), answer("Tea is found.")]
    got = app.node("ag_ui_tool")
    assert got["error"] is None, got
    calls = [t for t in got["types"] if t.startswith("TOOL_CALL")]
    assert calls == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    args = next(e for e in got["events"] if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args["delta"]) == {"query": "tea"}
    result = next(e for e in got["events"] if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == "found tea"
    assert got["text"] == "Tea is found."
    assert got["types"][-1] == "RUN_FINISHED"


def test_ag_ui_approval_resumed(app: Served) -> None:
    use = tool_use("delete_file", {"path": "a.txt"}, id="toolu_ag_del")
    app.model.script = [asks(use), answer("a.txt is gone.")]
    got = app.node("ag_ui_approval")
    first, second = got["first"], got["second"]
    assert first["error"] is None, got
    assert first["types"][-1] == "RUN_FINISHED"
    (interrupt,) = first["outcome"]["interrupts"]
    assert first["outcome"]["type"] == "interrupt"
    assert interrupt["reason"] == "tool_call"
    assert interrupt["toolCallId"] == "toolu_ag_del"
    assert interrupt["message"] == "Delete a file"  # the ask text, as the widget's card says it
    assert second["error"] is None, got
    assert second["types"][0] == "RUN_STARTED"
    assert second["types"][-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" in second["types"]
    every = first["events"] + second["events"]
    activity = next(e for e in every if e["type"] == "ACTIVITY_SNAPSHOT")
    assert activity["content"] == {"key": "activity.delete_file", "text": "Deleted a file"}
    assert second["text"] == "a.txt is gone."
    assert got["replayed"]["error"] is None, got  # a replayed resume is harmless
    assert got["replayed"]["types"][-1] == "RUN_FINISHED"
    assert got["unknown"]["event"]["code"] == "unknown_interrupt"


def test_ag_ui_failure(app: Served) -> None:
    app.model.script = []  # the model answers an error
    got = app.node("ag_ui_failure")
    error = got["runError"]
    assert error is not None, got
    assert error["code"] == "failed"
    assert _spanish(error["message"]), error


def test_ag_ui_cut_answer(app: Served) -> None:
    app.model.script = [body([text(LONG)], "max_tokens")]
    got = app.node("ag_ui_cut")
    assert got["streamed"], got  # text streamed before the cut
    assert got["types"][-2:] == ["MESSAGES_SNAPSHOT", "RUN_ERROR"], got
    assert got["runError"]["code"] == "truncated"
    assert all(LONG not in str(m["content"]) for m in got["snapshot"])
    assert all(LONG[:20] not in str(m["content"]) for m in got["messages"])  # withdrawn


def test_ag_ui_two_owners_of_one_thread_id_see_only_their_own(app: Served) -> None:
    app.model.script = [answer("Hi."), answer("Hello, other.")]
    got = app.node("ag_ui_other_user")
    assert got["mine"]["error"] is None, got
    assert got["theirs"]["error"] is None, got
    assert got["theirs"]["status"] == 200
    assert got["wrong"]["error"] is None, got  # a made-up token: an empty thread of its own
    assert got["wrong"]["types"] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert got["wrong"]["messages"] == 0
    assert got["loaded"]["mine"]["messages"] == [["user", "Hello."], ["assistant", "Hi."]]
    assert got["loaded"]["theirs"]["messages"] == [
        ["user", "Let me in."],
        ["assistant", "Hello, other."],
    ]


def test_ag_ui_dropped_stream_does_not_stop_the_turn(app: Served) -> None:
    app.model.script = [answer(LONGER)]
    got = app.node("ag_ui_dropped")
    assert "RUN_FINISHED" not in got["types"]  # dropped mid-answer
    assert got["conversation"]["running_turn_id"] is None
    assert got["conversation"]["messages"][-1]["text"] == LONGER


# ---- the AI SDK: DefaultChatTransport and readUIMessageStream -------------------------


def test_chat_text(app: Served) -> None:
    app.model.script = [answer("Hello there, reader.")]
    got = app.node("chat_text")
    assert got["error"] is None, got
    assert got["headers"]["protocol"] == "v1"
    assert got["headers"]["type"].startswith("text/event-stream")
    assert "no-cache" in got["headers"]["cache"]
    assert got["headers"]["token"]
    assert got["types"][:3] == ["start", "start-step", "text-start"]
    assert got["types"][-3:] == ["text-end", "finish-step", "finish"]
    assert got["finish"]["finishReason"] == "stop"
    assert got["text"] == "Hello there, reader."
    assert got["errors"] == []


def test_chat_tool(app: Served) -> None:
    app.model.script = [asks(tool_use("look_up", {"query": "tea"})), answer("Tea is found.")]
    got = app.node("chat_tool")
    assert got["errors"] == [], got
    assert got["types"].count("start-step") == 2 == got["types"].count("finish-step")
    (tool,) = [p for p in got["parts"] if p["type"] == "dynamic-tool"]
    assert tool["toolName"] == "look_up"
    assert tool["state"] == "output-available"
    assert tool["input"] == {"query": "tea"}
    assert tool["output"] == "found tea"
    assert got["text"] == "Tea is found."


def test_chat_approval_resumed(app: Served) -> None:
    app.model.script = [
        asks(tool_use("delete_file", {"path": "a.txt"}, id="toolu_chat_yes")),
        answer("a.txt is gone."),
        asks(tool_use("delete_file", {"path": "b.txt"}, id="toolu_chat_no")),
        answer("I left b.txt alone."),
    ]
    got = app.node("chat_approval")
    yes, no = got["approved"], got["denied"]
    assert "tool-approval-request" in yes["first"]["types"], got
    assert yes["first"]["types"][-1] == "finish"
    (asked,) = [p for p in yes["first"]["parts"] if p["type"] == "dynamic-tool"]
    assert asked["state"] == "approval-requested"
    assert yes["error"] is None, got
    (ran,) = [p for p in yes["second"]["parts"] if p["type"] == "dynamic-tool"]
    assert ran["state"] == "output-available"
    assert ran["output"] == "deleted a.txt"
    assert yes["second"]["text"] == "a.txt is gone."
    assert yes["second"]["id"] == yes["firstId"]  # the same message goes on
    assert any(p["type"] == "data-activity" for p in yes["second"]["parts"])
    assert "tool-output-denied" in no["second"]["types"], got
    (denied,) = [p for p in no["second"]["parts"] if p["type"] == "dynamic-tool"]
    assert denied["state"] == "output-denied"
    assert no["second"]["text"] == "I left b.txt alone."


def test_chat_failure(app: Served) -> None:
    app.model.script = []
    got = app.node("chat_failure")
    assert got["last"]["type"] == "error", got
    assert "finish" not in got["types"]
    assert _spanish(got["last"]["errorText"]), got


def test_chat_cut_answer(app: Served) -> None:
    app.model.script = [body([text(LONG)], "max_tokens")]
    got = app.node("chat_cut")
    assert "text-delta" in got["types"], got
    assert got["last"]["type"] == "error", got
    assert "finish" not in got["types"]


def test_chat_two_owners_of_one_chat_id_see_only_their_own(app: Served) -> None:
    app.model.script = [answer("Hi."), answer("Hello, other.")]
    got = app.node("chat_other_user")
    assert got["mine"][-1] == "finish"
    assert got["theirs"][-1] == "finish"
    assert got["tokens"] is True
    assert got["reconnect"] is None, "no active turn: 204"
    assert got["loaded"] == {
        "mine": [["user", "Hello."], ["assistant", "Hi."]],
        "theirs": [["user", "Let me in."], ["assistant", "Hello, other."]],
    }


def test_chat_dropped_stream_reconnected(app: Served) -> None:
    app.model.script = [answer(LONGER)]
    got = app.node("chat_dropped")
    assert "finish" not in got["dropped"], got
    again = got["reconnected"]
    assert again is not None, got
    assert again["types"][0] == "start"
    assert again["types"][-1] == "finish"
    assert again["text"] == LONGER
    assert got["afterwards"] is None
    assert got["status"] == 204


def test_ag_ui_stop_is_cancelled_and_a_late_resume_expired(app: Served) -> None:
    app.model.script = [
        answer(LONGER),
        asks(tool_use("delete_file", {"path": "b.txt"}, id="toolu_ag_late")),
    ]
    got = app.node("ag_ui_stop")
    stopped = got["stopped"]
    assert stopped["status"] == 202, got
    assert stopped["error"] is None, got
    assert stopped["outcome"] == {"type": "cancelled"}
    expired = got["expired"]
    assert expired["cancelled"] == 202
    assert expired["event"]["code"] == "expired", got

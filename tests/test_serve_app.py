"""`turnkeeper serve APP` and `turnkeeper worker APP` as real processes against a fake
Messages API: the app's instructions, settings, tools and captions in every process, and
the reader's user and locale carried through the queue to a tool in another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.apps import orders
from tests.fake_model import FakeModelServer
from tests.scripts import answer, asks, tool_use
from tests.test_server import free_port, output, turnkeeper, until_up
from tests.waiting import eventually
from turnkeeper.cli import main

APPS = str(Path(__file__).resolve().parent / "apps")
ADA = {"x-user": "ada"}


@contextmanager
def model_env(script: list[Any]) -> Iterator[tuple[FakeModelServer, dict[str, str]]]:
    with FakeModelServer(script) as model:
        env = {
            **os.environ,
            "ANTHROPIC_API_KEY": "sk-test-not-real",
            "ANTHROPIC_BASE_URL": model.url,
        }
        yield model, env


async def ask_as_ada(base: str, text: str, locale: str) -> dict[str, Any]:
    """Ada's question, in `locale`; the turn's final state."""
    async with httpx.AsyncClient(base_url=base, headers=ADA) as client:
        assert (await client.post("/api/conversations", headers={"x-user": ""})).status_code == 401
        cid = (await client.post("/api/conversations")).json()["conversation_id"]
        sent = await client.post(
            f"/api/conversations/{cid}/turns", json={"text": text, "locale": locale}
        )
        turn_id = sent.json()["turn_id"]
        final: dict[str, Any] = {}

        async def done() -> bool:
            final.update((await client.get(f"/api/turns/{turn_id}")).json())
            return bool(final["done"])

        await eventually(done, "the turn to finish", bound=30)
        return final


def tool_result(request: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(request["messages"][-1]["content"][0]["content"])
    return result


SCRIPT = [asks(tool_use("my_orders", {})), answer("A teapot and a kettle.")]


async def test_serve_app_runs_the_apps_assistant(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    database = f"sqlite:///{tmp_path / 'tk.db'}"
    log = tmp_path / "serve.log"
    with (
        model_env(SCRIPT) as (model, env),
        turnkeeper(
            "serve", "orders:assistant", "--app-dir", APPS, "--provider", "anthropic",
            "--database", database, "--port", str(port), log=log, env=env,
        ) as process,
    ):  # fmt: skip
        await until_up(base, process, log)
        banner = output(log)
        assert "orders:assistant ('Order desk')" in banner
        assert "my_orders, order_status" in banner
        assert "en, es, fr, pt-BR" in banner
        assert "signed in (authenticate)" in banner
        final = await ask_as_ada(base, "what did I order?", "fr-FR")
        async with httpx.AsyncClient(base_url=base) as client:
            french = (await client.get("/locales/fr.json")).json()
    assert final["status"] == "finished", output(log)
    assert final["messages"][-1]["text"] == "A teapot and a kettle."
    first, second = model.requests
    assert first["system"][0]["text"] == orders.INSTRUCTIONS
    assert (first["max_tokens"], first["temperature"]) == (2048, 0.2)
    given = tool_result(second)
    assert (given["user"], given["locale"], given["turn_id"]) == ("ada", "fr", final["turn_id"])
    assert given["orders"] == ["o-1 teapot", "o-2 kettle"]
    assert french["activity.my_orders"] == "A consulté vos commandes"
    assert french["ui.send"] == "Envoyer"


@pytest.mark.postgres
async def test_a_worker_on_another_process_gives_the_tool_the_same_context(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    app = ["orders:assistant", "--app-dir", APPS, "--provider", "anthropic"]
    with ExitStack() as stack:
        url = stack.enter_context(fresh_schema(postgres_database))
        model, env = stack.enter_context(model_env(SCRIPT))
        serve_log, worker_log = tmp_path / "serve.log", tmp_path / "worker.log"
        api = stack.enter_context(
            turnkeeper(
                "serve", *app, "--no-worker", "--database", url, "--port", str(port),
                log=serve_log, env=env,
            )
        )  # fmt: skip
        await until_up(base, api, serve_log)
        stack.enter_context(turnkeeper("worker", *app, "--database", url, log=worker_log, env=env))
        final = await ask_as_ada(base, "what did I order?", "pt-BR")
    assert final["status"] == "finished", output(worker_log)
    assert "orders:assistant ('Order desk')" in output(worker_log)
    first, second = model.requests
    assert first["system"][0]["text"] == orders.INSTRUCTIONS
    given = tool_result(second)
    assert (given["user"], given["locale"], given["turn_id"]) == ("ada", "pt-BR", final["turn_id"])


def test_a_bad_app_is_one_line_and_exit_2_before_anything_is_served(tmp_path: Path) -> None:
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "turnkeeper", "serve", "shop:assistant", "--port", str(port)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("turnkeeper: error: no module named 'shop'")
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "turnkeeper.db").exists(), "nothing was opened"


@pytest.mark.parametrize("command", ["serve", "worker"])
@pytest.mark.parametrize(
    ("app", "says"),
    [
        ("orders", "must be written module:attribute"),
        ("orders:nobody", "has no attribute 'nobody'"),
        ("orders:not_an_assistant", "not a turnkeeper.Assistant"),
        ("broken:assistant", "NameError"),
        ("wrong_caption:assistant", "captions for tools it does not have"),
    ],
)
def test_bad_apps_exit_2_with_one_line(
    command: str,
    app: str,
    says: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("orders", "broken", "wrong_caption"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    database = ["--database", "postgresql://nobody@127.0.0.1:9/x"] if command == "worker" else []
    assert main([command, app, "--app-dir", APPS, *database]) == 2
    err = capsys.readouterr().err
    assert says in err
    assert err.count("\n") == 1, err


def test_root_belongs_to_the_demo_assistant(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["serve", "orders:assistant", "--app-dir", APPS, "--root", APPS]) == 2
    assert "--root is the demo assistant's folder" in capsys.readouterr().err


def test_a_days_cost_on_a_model_with_no_price_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Issue 31: the model is chosen where the turns run (`--model`); `serve` checks it
    has a price before it opens anything."""
    (tmp_path / "capped_cost.py").write_text(
        "from turnkeeper import Assistant, Limits\n"
        "assistant = Assistant(limits=Limits(cost_per_day=1.0))\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "turnkeeper", "serve", "capped_cost:assistant", "--model",
         "my-unpriced", "--port", str(free_port())],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ANTHROPIC_API_KEY": "sk-test"},
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith(
        "turnkeeper: error: limits has cost_per_day, but the model 'my-unpriced' has no price"
    )
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "turnkeeper.db").exists(), "nothing was opened"

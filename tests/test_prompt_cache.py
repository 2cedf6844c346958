"""Prompt caching by default (issue 21): the marks on the wire of served turns on both stores
and of the CLI, the opt-out and the TTL, and the cache's tokens counted and priced from
real recorded responses everywhere usage is shown."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.fake_model import FakeModelServer
from tests.providers.wire_server import WireServer, recording, replayed, streamed
from tests.scripts import answer, asks, tool_use
from tests.test_server import free_port, output, turnkeeper, until_up
from tests.waiting import eventually
from turnkeeper import Assistant, LocalHooks, run_turn
from turnkeeper.cli import main
from turnkeeper.errors import ConfigError
from turnkeeper.observe import prices
from turnkeeper.observe.metrics import Metrics
from turnkeeper.observe.telemetry import Telemetry
from turnkeeper.providers import cache_marks
from turnkeeper.providers.anthropic import AnthropicProvider

INSTRUCTIONS = "You answer questions about orders, briefly."
APP = f'''
from turnkeeper import Assistant

def lookup(order_id: str) -> str:
    """Where an order is."""
    return f"{{order_id}}: shipped"

assistant = Assistant(name="Cached desk", instructions={INSTRUCTIONS!r}, tools=[lookup],
                      prompt_cache="1h")
'''
HOUR = {"type": "ephemeral", "ttl": "1h"}
CACHE_WRITE = "vercel__ai/anthropic__anthropic-issue-5942-cache-write__chunks__hist-88ece611.json"
CACHE_READ = "vercel__ai/anthropic__anthropic-issue-5942-cache-read__chunks__hist-6fbe215f.json"
CODE_EXECUTION = (
    "vercel__ai/anthropic__anthropic-code-execution-20260120-prompt-cache.1__chunks.json"
)
XAI_TOOL_CALL = "vercel__ai/xai__xai-tool-call.json"
OPENAI_TEXT = "vercel__ai/openai__chat__openai-text.json"


def script() -> list[dict[str, Any]]:
    """Two turns: a tool round and an answer, then a second answer."""
    return [asks(tool_use("lookup", {"order_id": "o-1"})), answer("o-1 shipped"), answer("no")]


def marks(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """(where, cache_control) of every mark in a request body."""
    found = [(f"tools[{i}]", t.get("cache_control")) for i, t in enumerate(body.get("tools", []))]
    system = body.get("system")
    blocks = system if isinstance(system, list) else []
    found += [(f"system[{i}]", b.get("cache_control")) for i, b in enumerate(blocks)]
    for i, m in enumerate(body["messages"]):
        blocks = m["content"] if isinstance(m["content"], list) else []
        found += [(f"messages[{i}][{j}]", b.get("cache_control")) for j, b in enumerate(blocks)]
    return [(where, mark) for where, mark in found if mark is not None]


def assert_marked_for_an_hour(requests: list[dict[str, Any]]) -> None:
    """The app's three requests: its tools, instructions and history marked, 1 h each."""
    first, second, third = requests
    assert [w for w, _ in marks(first)] == ["tools[0]", "system[0]"]
    assert [w for w, _ in marks(second)] == ["tools[0]", "system[0]", "messages[2][0]"]
    assert [w for w, _ in marks(third)] == [
        "tools[0]", "system[0]", "messages[2][0]", "messages[3][0]",
    ]  # fmt: skip
    assert all(mark == HOUR for r in requests for _, mark in marks(r))
    assert first["system"][0]["text"] == INSTRUCTIONS


@contextmanager
def cached_app(tmp_path: Path) -> Iterator[tuple[FakeModelServer, dict[str, str], list[str]]]:
    (tmp_path / "cached.py").write_text(APP)
    with FakeModelServer(script()) as model:
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": model.url}
        yield (
            model,
            env,
            ["cached:assistant", "--app-dir", str(tmp_path), "--provider", "anthropic"],
        )


async def two_turns(base: str) -> list[dict[str, Any]]:
    """Two questions in one conversation, one after the other; each turn's final state."""
    async with httpx.AsyncClient(base_url=base) as client:
        created = (await client.post("/api/conversations")).json()
        auth = {"authorization": f"Bearer {created['token']}"}
        path = f"/api/conversations/{created['conversation_id']}/turns"
        finals = []
        for question in ("where is o-1?", "anything else?"):
            sent = await client.post(path, json={"text": question}, headers=auth)
            finals.append(await finished(client, sent.json()["turn_id"], auth))
    return finals


async def finished(client: httpx.AsyncClient, turn_id: str, auth: dict[str, str]) -> Any:
    final: dict[str, Any] = {}

    async def done() -> bool:
        final.update((await client.get(f"/api/turns/{turn_id}", headers=auth)).json())
        return bool(final["done"])

    await eventually(done, "the turn to finish", bound=30)
    return final


@pytest.mark.parametrize("opt_out", [False, True])
async def test_a_served_turn_on_sqlite_marks_the_cache_unless_told_not_to(
    tmp_path: Path, opt_out: bool
) -> None:
    port, log = free_port(), tmp_path / "serve.log"
    with cached_app(tmp_path) as (model, env, app):
        flags = ["--no-prompt-cache"] if opt_out else []
        database = f"sqlite:///{tmp_path / 'tk.db'}"
        with turnkeeper(
            "serve", *app, *flags, "--database", database, "--port", str(port), log=log, env=env
        ) as process:
            await until_up(f"http://127.0.0.1:{port}", process, log)
            finals = await two_turns(f"http://127.0.0.1:{port}")
    assert [f["status"] for f in finals] == ["finished", "finished"], output(log)
    assert len(model.requests) == 3
    if opt_out:
        assert all("cache_control" not in json.dumps(r) for r in model.requests)
        assert model.requests[0]["system"] == INSTRUCTIONS
    else:
        assert_marked_for_an_hour(model.requests)


@pytest.mark.postgres
async def test_a_worker_on_postgresql_marks_the_cache_of_the_turns_it_runs(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema

    port = free_port()
    with ExitStack() as stack:
        url = stack.enter_context(fresh_schema(postgres_database))
        model, env, app = stack.enter_context(cached_app(tmp_path))
        serve_log, worker_log = tmp_path / "serve.log", tmp_path / "worker.log"
        api = stack.enter_context(
            turnkeeper(
                "serve", *app, "--no-worker", "--no-prompt-cache", "--database", url,
                "--port", str(port), log=serve_log, env=env,
            )
        )  # fmt: skip
        await until_up(f"http://127.0.0.1:{port}", api, serve_log)
        worker = ["worker", *app, "--database", url]
        stack.enter_context(turnkeeper(*worker, log=worker_log, env=env))
        finals = await two_turns(f"http://127.0.0.1:{port}")
    assert [f["status"] for f in finals] == ["finished", "finished"], output(worker_log)
    # the worker calls the model: its setting (the app's "1h") counts, not the API process's
    assert_marked_for_an_hour(model.requests)


# ---- the command line --------------------------------------------------------------


@pytest.mark.parametrize("opt_out", [False, True])
def test_run_marks_the_cache_unless_told_not_to(
    server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    opt_out: bool,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    (tmp_path / "todo.txt").write_text("write tests")
    server.add(replayed("vercel__ai/anthropic__anthropic-tool-no-args.json"))
    server.add(replayed("vercel__ai/anthropic__anthropic-text.json"))
    trace = tmp_path / "t.json"
    argv = ["run", "--provider", "anthropic", "--root", str(tmp_path), "--trace", str(trace)]
    assert main([*argv, *(["--no-prompt-cache"] if opt_out else []), "--json", "todo?"]) == 0
    capsys.readouterr()
    first, second = (r.body for r in server.requests)
    recorded = json.loads(trace.read_text())
    if opt_out:
        assert all("cache_control" not in json.dumps(b) for b in (first, second))
        assert recorded["request"]["prompt_cache"] is None
        return
    assert [w for w, _ in marks(first)] == ["tools[0]"], "read_file; no instructions"
    assert [w for w, _ in marks(second)] == ["tools[0]", "messages[2][0]"]
    assert max(cache_marks.breakpoints(b) for b in (first, second)) <= cache_marks.MAX_BREAKPOINTS
    assert recorded["request"]["prompt_cache"] == "5m"
    assert "cache_control" not in json.dumps(recorded["history"])


def test_the_assistants_prompt_cache_is_checked_and_reaches_its_provider() -> None:
    environ = {"ANTHROPIC_API_KEY": "k"}
    for setting, ttl in ((True, "5m"), ("1h", "1h"), (False, None)):
        provider = Assistant(prompt_cache=setting).choose_provider(environ, provider="anthropic")
        assert isinstance(provider, AnthropicProvider)
        assert provider.cache_ttl == ttl
    with pytest.raises(ConfigError, match="prompt_cache must be True, False, '5m' or '1h'"):
        Assistant(prompt_cache="forever")
    openai = Assistant(prompt_cache="1h").choose_provider(
        {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, provider="openai"
    )
    params = openai.request([{"role": "user", "content": "q"}], [], 1.0)  # type: ignore[attr-defined]
    assert "cache" not in json.dumps(params), "an OpenAI-compatible server is sent nothing"


# ---- counted and priced from real recorded responses ---------------------------------


@pytest.fixture
def fresh_prices() -> Iterator[None]:
    prices.use(None)
    yield
    prices.use(None)


async def recorded_turns(server: WireServer, names: list[str], **watch: Any) -> list[Any]:
    """One turn per recorded stream, each continuing the conversation."""
    server.add(*(streamed(n) for n in names))
    provider = AnthropicProvider(api_key="k", base_url=server.url, stream=True)
    history: list[Any] = []
    results = []
    try:
        for n, _ in enumerate(names):
            result = await run_turn(
                f"question {n}", provider=provider, history=history,
                hooks=LocalHooks(reporter=lambda r: None), **watch,
            )  # fmt: skip
            history = result.history
            results.append(result)
    finally:
        await provider.aclose()
    return results


@pytest.mark.usefixtures("fresh_prices")
async def test_a_recorded_write_then_read_is_published_and_priced(server: WireServer) -> None:
    """vercel/ai's recordings of one prompt (claude-sonnet-4-6): 18,639 tokens written,
    then the same 18,639 read back."""
    written, read = (recording(n)["summary"]["usage"] for n in (CACHE_WRITE, CACHE_READ))
    assert written["cache_creation_input_tokens"] == read["cache_read_input_tokens"] == 18_639
    first, second = await recorded_turns(server, [CACHE_WRITE, CACHE_READ])
    assert first.state.to_json()["usage"] | {"cost_usd": 0} == {
        "iterations": 1, "input_tokens": 3, "output_tokens": 1,
        "cache_creation_input_tokens": 18_639, "cache_read_input_tokens": 0,
        "web_search_requests": 0, "web_fetch_requests": 0, "cost_usd": 0,
    }  # fmt: skip
    assert second.usage.cache_read_input_tokens == 18_639
    assert second.usage.cache_creation_input_tokens == 0
    # Sonnet 4.6: $3 in, $15 out, $3.75 cache write, $0.30 cache read per million
    assert first.usage.cost_usd == pytest.approx((3 * 3 + 1 * 15 + 18_639 * 3.75) / 1e6)
    assert second.usage.cost_usd == pytest.approx((3 * 3 + 1 * 15 + 18_639 * 0.30) / 1e6)
    assert second.usage.cost_usd < first.usage.cost_usd / 10


@pytest.mark.usefixtures("fresh_prices")
async def test_a_model_without_cache_prices_is_priced_at_the_documented_multiples(
    server: WireServer, tmp_path: Path
) -> None:
    """A real response that both wrote (3,337) and read (6,289), from a model the shipped
    table lacks; the price file gives only input and output."""
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"claude-sonnet-5": {"input": 3, "output": 15}}))
    prices.use(prices.load(path, environ={}))
    (result,) = await recorded_turns(server, [CODE_EXECUTION])
    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens) == (6, 198)
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (3_337, 6_289)
    # writes at 1.25x input, reads at 0.1x
    expected = (6 * 3 + 198 * 15 + 3_337 * 3 * 1.25 + 6_289 * 3 * 0.1) / 1e6
    assert usage.cost_usd == pytest.approx(expected)


@pytest.mark.usefixtures("fresh_prices")
def test_trace_show_has_the_cache_per_call_and_in_the_totals(
    server: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """An OpenAI-compatible turn of two real responses (244 of the first's 291 prompt
    tokens cached), traced by `run` and shown as text and as JSON."""
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    server.add(replayed(XAI_TOOL_CALL), replayed(OPENAI_TEXT))
    trace = tmp_path / "t.json"
    argv = ["run", "--provider", "openai", "--model", "m", "--root", str(tmp_path), "--json"]
    assert main([*argv, "--trace", str(trace), "weather?"]) == 0
    published = json.loads(capsys.readouterr().out)["usage"]
    assert (published["input_tokens"], published["cache_read_input_tokens"]) == (47 + 16, 244)
    assert main(["trace", "show", "--json", str(trace)]) == 0
    shown = json.loads(capsys.readouterr().out)
    rows = shown["iterations"]
    assert [r["input_tokens"] for r in rows] == [291, 16], "every input token each call sent"
    assert [r["cache_read_input_tokens"] for r in rows] == [244, 0]
    assert [r["cache_creation_input_tokens"] for r in rows] == [0, 0]
    assert shown["totals"]["cache_read_input_tokens"] == 244
    assert shown["totals"]["input_tokens"] == 307
    assert main(["trace", "show", str(trace)]) == 0
    header, first, _, totals = capsys.readouterr().out.splitlines()
    assert "in     +in cache w cache r    out" in header
    assert "streamed" in first, "the provider streamed the call (trace show marks it)"
    assert first.split()[2:6] == ["291", "0", "244", "26"], "in, cache w, cache r, out"
    assert totals.split()[3:6] == ["307", "0", "244"]


async def test_metrics_and_spans_count_the_recorded_cache_tokens(server: WireServer) -> None:
    metrics, exporter = Metrics(), InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    from turnkeeper.observe.watchers import Watchers

    watcher = Watchers([metrics, Telemetry(tracer)])
    await recorded_turns(server, [CACHE_WRITE, CACHE_READ], watcher=watcher)
    exposition = metrics.exposition().decode()
    assert 'turnkeeper_tokens_total{kind="cache_write"} 18639.0' in exposition
    assert 'turnkeeper_tokens_total{kind="cache_read"} 18639.0' in exposition
    assert 'turnkeeper_tokens_total{kind="input"} 6.0' in exposition
    calls = [
        dict(s.attributes or {}) for s in exporter.get_finished_spans() if s.name.startswith("chat")
    ]
    assert [c["gen_ai.usage.cache_creation.input_tokens"] for c in calls] == [18_639, 0]
    assert [c["gen_ai.usage.cache_read.input_tokens"] for c in calls] == [0, 18_639]
    # the conventions' input_tokens include the cached ones
    assert [c["gen_ai.usage.input_tokens"] for c in calls] == [18_642, 18_642]

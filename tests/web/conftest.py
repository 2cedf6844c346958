"""A real `turnkeeper serve` on 127.0.0.1, a fake model it calls over HTTP, and headless Chromium.

`serve --provider anthropic` talks to a `FakeModelServer` through the official SDK
(`ANTHROPIC_BASE_URL`), so the widget sees exactly what a real deployment would
publish. Chromium is Debian's (`/usr/bin/chromium`, which `scripts/test` installs);
Playwright only drives it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from tests.fake_model import FakeModelServer
from tests.test_server import free_port, output, until_answers

CHROMIUM = Path(os.environ.get("TURNKEEPER_CHROMIUM") or "/usr/bin/chromium")
RESULTS = Path(__file__).resolve().parents[2] / "test-results"
"""Where screenshots go with the test output (gitignored)."""

expect.set_options(timeout=15_000)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(
                f"{CHROMIUM} is missing; scripts/test installs it (apt-get install chromium)"
            )
        pytest.skip(f"Chromium is not installed at {CHROMIUM}; scripts/test installs it")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield launched
        launched.close()


@dataclass
class Served:
    """A running `turnkeeper serve` and the fake model behind it."""

    base: str
    model: FakeModelServer
    log: Path

    def answering(self, script: Sequence[Any]) -> Served:
        """The fake model answers the next calls with `script`, as if freshly started."""
        with self.model._lock:
            self.model.script = list(script)
            self.model.requests.clear()
            self.model.released = threading.Event()
        return self

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.model.release()

    def page(self, browser: Browser, **options: Any) -> Page:
        """A fresh browser profile (empty localStorage) showing `/`."""
        context: BrowserContext = browser.new_context(**options)
        page = context.new_page()
        page.goto(f"{self.base}/")
        return page


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed browser test shows what `serve` logged and what the fake model was asked:
    the page's view alone cannot tell a turn that ended from a request that failed."""
    report = yield
    served = getattr(item, "funcargs", {}).get("served")
    if report.when == "call" and report.failed and isinstance(served, Served):
        lines = output(served.log).splitlines()[-60:]
        report.sections.append(("serve log, its last 60 lines", "\n".join(lines)))
        asked = [str(r.get("messages"))[:100] for r in served.model.requests]
        hung_up = [str(r.get("messages"))[:100] for r in served.model.abandoned]
        seen = f"answered: {asked}\nhung up before read: {hung_up}"
        report.sections.append(("the fake model's requests this test", seen))
    return report


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One `turnkeeper serve` per test module (starting one takes seconds on a busy machine);
    every test opens a fresh browser profile, so a new conversation."""
    with serving([], tmp_path_factory.mktemp("serve")) as served:
        yield served


@pytest.fixture
def served(server: Served) -> Iterator[Served]:
    yield server.answering([])
    server.model.release()  # a test that failed mid-hold leaves no turn hanging


@contextmanager
def serving(
    script: Sequence[Any], tmp_path: Path, *extra: str, provider: str = "anthropic"
) -> Iterator[Served]:
    """`turnkeeper serve` on a free port, its model (the fake, unless `provider` says
    otherwise) answering with `script` in order."""
    port = int(extra[extra.index("--port") + 1]) if "--port" in extra else free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with FakeModelServer(script) as model, log.open("wb") as out:
        env = {
            **os.environ,
            "ANTHROPIC_API_KEY": "sk-test-not-real",
            "ANTHROPIC_BASE_URL": model.url,
        }
        database = f"sqlite:///{tmp_path / 'tk.db'}"
        argv = ["serve", "--provider", provider, "--database", database]
        argv += [] if "--port" in extra else ["--port", str(port)]
        process = subprocess.Popen(
            [sys.executable, "-m", "turnkeeper", *argv, *extra],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            until_answers(f"{base}/openapi.json", process, log)
            yield Served(base, model, log)
        finally:
            model.release()
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

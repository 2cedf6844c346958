"""`turnkeeper serve` and `turnkeeper worker` as real processes, over real HTTP (uvicorn)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.waiting import STARTING, eventually


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def turnkeeper(
    *args: str, log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    with running([sys.executable, "-m", "turnkeeper", *args], log=log, env=env) as process:
        yield process


@contextmanager
def running(
    command: Sequence[str], *, log: Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """`command` with its output in `log`; stopped with SIGTERM (then SIGKILL) at exit."""
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def until_answers(
    url: str, process: subprocess.Popen[bytes], log: Path, bound: float = STARTING
) -> None:
    """Wait until `url` answers 200 (a process starting up), with a bound; fail with its log."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the process exited: {output(log)}"
        try:
            if httpx.get(url).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)  # polling a process we do not control, with a bound
    raise AssertionError(f"{url} did not answer within {bound} s: {output(log)}")


def output(log: Path) -> str:
    return log.read_text(errors="replace")


def raw_request(port: int, head: bytes) -> bytes:
    """Send only a request's head over a socket; everything the server answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head)
        received = b""
        while chunk := s.recv(65536):
            received += chunk
    return received


async def until_up(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    async def up() -> bool:
        assert process.poll() is None, f"the server exited: {output(log)}"
        try:
            async with httpx.AsyncClient() as client:
                return (await client.get(f"{base}/openapi.json")).status_code == 200
        except httpx.TransportError:
            return False

    await eventually(up, "the server accepting connections", bound=STARTING)


async def demo_turn(base: str) -> dict[str, Any]:
    """Ask the demo model about the todo list; the final published state."""
    async with httpx.AsyncClient(base_url=base) as client:
        created = (await client.post("/api/conversations")).json()
        auth = {"authorization": f"Bearer {created['token']}"}
        response = await client.post(
            f"/api/conversations/{created['conversation_id']}/turns",
            json={"text": "what's on my todo list?"},
            headers=auth,
        )
        assert response.status_code == 202
        turn_id = response.json()["turn_id"]
        states: list[dict[str, Any]] = []

        async def done() -> bool:
            after = states[-1]["version"] if states else 0
            r = await client.get(f"/api/turns/{turn_id}", params={"after": after}, headers=auth)
            if r.status_code == 200:
                states.append(r.json())
            return bool(states and states[-1]["done"])

        await eventually(done, "the turn finishing", bound=30)
    versions = [s["version"] for s in states]
    assert versions == sorted(set(versions))
    return states[-1]


async def test_serve_runs_turns_embedded_on_sqlite(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    database = f"sqlite:///{tmp_path / 'tk.db'}"
    with turnkeeper("serve", "--database", database, "--port", str(port), log=log) as server:
        await until_up(base, server, log)
        state = await demo_turn(base)
        head = (
            b"POST /api/conversations HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 2000000\r\n\r\n"
        )
        answer = await asyncio.to_thread(raw_request, port, head)
    assert state["status"] == "finished"
    assert state["messages"][-1]["text"] == "your todos: write tests"
    assert answer.startswith(b"HTTP/1.1 413 "), answer
    assert b'{"error": "The request body is larger than 1 MiB."}' in answer


async def test_serve_keeps_an_idle_connection_open_past_common_clients_idle_timeouts(
    tmp_path: Path,
) -> None:
    """A client (or a proxy) closes its idle connections after its own timeout: httpx's 5 s,
    a load balancer's 60 s. A server that closes one first races a request sent on it, which
    is lost (a reset, or "disconnected without a response"): with uvicorn's default 5 s, one
    of 1,000 readers' requests under load in bench G. A connection idle for 6 s is still
    `serve`'s: the next request goes over the same one."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    database = f"sqlite:///{tmp_path / 'tk.db'}"
    limits = httpx.Limits(keepalive_expiry=60)

    async def sender(client: httpx.AsyncClient) -> Any:
        """The client's address on the connection a request went over."""
        response = await client.get("/openapi.json")
        assert response.status_code == 200
        return response.extensions["network_stream"].get_extra_info("client_addr")

    with turnkeeper("serve", "--database", database, "--port", str(port), log=log) as server:
        await until_up(base, server, log)
        async with httpx.AsyncClient(base_url=base, limits=limits) as client:
            first = await sender(client)
            await asyncio.sleep(6)  # the idleness is what is tested: past uvicorn's 5 s
            second = await sender(client)
    assert second == first, "serve closed the idle connection: the request went over a new one"


async def test_serve_keep_alive_sets_how_long_an_idle_connection_stays_open(
    tmp_path: Path,
) -> None:
    """Behind a proxy whose own idle timeout is longer than 120 s, `--keep-alive` outlasts it;
    here, shorter: `serve` closes a connection idle for 1 s, not before."""
    port = free_port()
    log = tmp_path / "serve.log"
    database = f"sqlite:///{tmp_path / 'tk.db'}"
    serve = ("serve", "--database", database, "--port", str(port), "--keep-alive", "1")

    def idle_until_closed() -> float:
        """Seconds from the end of an answer until `serve` closes its connection."""
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /api/conversations/none HTTP/1.1\r\nHost: x\r\n\r\n")
            head = s.recv(65536)
            answered = time.monotonic()
            assert head.startswith(b"HTTP/1.1 "), head
            while s.recv(65536):
                answered = time.monotonic()
            return time.monotonic() - answered

    with turnkeeper(*serve, log=log) as server:
        await until_up(f"http://127.0.0.1:{port}", server, log)
        idle = await asyncio.to_thread(idle_until_closed)
    assert 0.8 <= idle < 5, f"closed after {idle:.2f} s idle"


async def test_serve_no_worker_and_a_worker_process_on_postgresql(
    postgres_database: str, tmp_path: Path
) -> None:
    from tests.databases import fresh_schema

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with fresh_schema(postgres_database) as url:
        serve_log, worker_log = tmp_path / "serve.log", tmp_path / "worker.log"
        serve = ("serve", "--no-worker", "--database", url, "--port", str(port))
        with turnkeeper(*serve, log=serve_log) as server:
            await until_up(base, server, serve_log)
            with turnkeeper("worker", "--database", url, log=worker_log):
                state = await demo_turn(base)
    assert state["status"] == "finished", output(worker_log)
    assert state["messages"][-1]["text"] == "your todos: write tests"


def test_no_worker_needs_postgresql(tmp_path: Path) -> None:
    """(A free port: with the default one taken, `serve` would say that first.)"""
    port = str(free_port())
    result = subprocess.run(
        [sys.executable, "-m", "turnkeeper", "serve", "--no-worker", "--port", port],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 2
    assert "PostgreSQL" in result.stderr
    assert not (tmp_path / "turnkeeper.db").exists()

"""Over real HTTP (uvicorn under `turnkeeper serve`): bad input is answered 4xx on a connection
that stays open, and the server logs no traceback for it."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

from tests.test_server import free_port, output, turnkeeper, until_up

DEEP = b'{"text": ' + b"[" * 1000 + b"]" * 1000 + b"}"
WIDE = b'{"text": "hi", "n": ' + b"7" * 5000 + b"}"


def read_response(s: socket.socket) -> tuple[int, bytes]:
    """One HTTP/1.1 response with a Content-Length body: its status and body."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = s.recv(65536)
        assert chunk, "the server closed the connection"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {k.lower(): v.strip() for k, v in (h.split(":", 1) for h in lines[1:])}
    length = int(fields.get("content-length", "0"))
    while len(body) < length:
        chunk = s.recv(65536)
        assert chunk, "the server closed the connection mid-body"
        body += chunk
    return int(lines[0].split()[1]), body


def request(method: str, path: str, body: bytes = b"", **headers: str) -> bytes:
    fields = {"host": "x", "content-length": str(len(body)), **headers}
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
    return head.encode() + b"\r\n" + body


def exchange(port: int) -> list[tuple[int, bytes]]:
    """On one connection: a conversation and a turn, three malformed requests, a good one."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request("POST", "/api/conversations"))
        created = json.loads(read_response(s)[1])
        auth = f"Bearer {created['token']}"
        path = f"/api/conversations/{created['conversation_id']}/turns"
        s.sendall(request("POST", path, b'{"text": "fine"}', authorization=auth))
        status, body = read_response(s)
        assert status == 202
        turn = f"/api/turns/{json.loads(body)['turn_id']}"
        answers = []
        for sent in (
            request("POST", path, DEEP, authorization=auth, **{"content-type": "application/json"}),
            request("POST", path, WIDE, authorization=auth),
            request("GET", f"{turn}?after=%C2%B2", authorization=auth),
            request("GET", turn, authorization=auth),
        ):
            s.sendall(sent)
            answers.append(read_response(s))
    return answers


async def test_malformed_bodies_get_4xx_and_keep_the_connection(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    database = f"sqlite:///{tmp_path / 'tk.db'}"
    with turnkeeper("serve", "--database", database, "--port", str(port), log=log) as server:
        await until_up(f"http://127.0.0.1:{port}", server, log)
        answers = await asyncio.to_thread(exchange, port)
    assert [status for status, _ in answers] == [400, 400, 400, 200], answers
    assert all(body.startswith(b'{"error":') for _, body in answers[:3])
    assert "Traceback" not in output(log)

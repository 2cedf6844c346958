"""An HTTP server a fake runs on this machine: 127.0.0.1, a free port, a thread of its own.

`with LocalServer(Handler) as server:` serves `server.url` until the block ends; each
request is handled on a daemon thread, so one left hanging never holds up the end. The
benchmarks' fake APIs (`window_api.py`, `cache_api.py`) and the tests' fake models
(`tests/fake_model.py`, `tests/window_server.py`) are LocalServers with a handler of
their own; a page or a model one test makes uses it as it is.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LocalServer:
    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

"""A PostgreSQL server of the test's own, in a temporary folder on a free port, to restart.

initdb and pg_ctl from /usr/lib/postgresql/*/bin; run as the `postgres` user
when the tests run as root (initdb refuses root). Skipped with the reason when
the binaries are absent, unless `CI` is set.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from tests.test_server import free_port


def _binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


class OwnPostgres:
    def __init__(self, bin_dir: Path, folder: Path) -> None:
        self.bin_dir = bin_dir
        self.data = folder / "data"
        self.folder = folder
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        binary = str(self.bin_dir / command[0])
        subprocess.run(
            [*as_user, binary, *command[1:]], check=True, capture_output=True, timeout=60
        )

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-N")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.folder / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-l", log, "-o", options, "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def restart(self) -> None:
        """A fast restart: every connection is terminated by the server."""
        self.stop()
        self.start()


@contextmanager
def own_postgres() -> Iterator[OwnPostgres]:
    bin_dir = _binaries()
    if bin_dir is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL's initdb and pg_ctl are required under CI")
        pytest.skip("no PostgreSQL binaries in /usr/lib/postgresql/*/bin; set CI=1 to fail")
    folder = Path(tempfile.mkdtemp(prefix="turnkeeper-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    server = OwnPostgres(bin_dir, folder)
    try:
        server.init()
        server.start()
        yield server
    finally:
        with suppress(subprocess.CalledProcessError):
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)

"""A real, throwaway PostgreSQL server for the tests: its own data directory and a free local port.

The server binaries come from Debian's postgresql package, which `make test` installs. PostgreSQL
refuses to run as root, so under root the server runs as the `postgres` user the package created.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

SUPERUSER = "postgres"


def server_bindir() -> Path:
    """The newest installed server's bin directory; ROUNDTABLE_PG_BINDIR overrides."""
    if override := os.environ.get("ROUNDTABLE_PG_BINDIR"):
        return Path(override)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name))
    if not found:
        raise RuntimeError("no PostgreSQL server found: run `make test`, which installs Debian's postgresql package")
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class PostgresServer:
    directory: Path
    port: int
    _run_as: str | None
    _names: itertools.count = field(default_factory=lambda: itertools.count(1))

    @classmethod
    def start(cls) -> PostgresServer:
        bindir = server_bindir()
        run_as = "postgres" if os.geteuid() == 0 else None
        directory = Path(tempfile.mkdtemp(prefix="roundtable-pg-"))
        if run_as:
            user = pwd.getpwnam(run_as)
            os.chown(directory, user.pw_uid, user.pw_gid)
        server = cls(directory, _free_port(), run_as)
        data = directory / "data"
        server._run(bindir / "initdb", "-D", str(data), "-U", SUPERUSER, "-A", "trust", "--no-sync", "-E", "UTF8")
        options = f"-h 127.0.0.1 -p {server.port} -k {directory} -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        server._run(bindir / "pg_ctl", "-D", str(data), "-l", str(directory / "server.log"), "-o", options, "-w", "start")
        return server

    def _run(self, *args: str | Path) -> None:
        subprocess.run([str(a) for a in args], check=True, capture_output=True, user=self._run_as, cwd=self.directory)

    def stop(self) -> None:
        self._run(server_bindir() / "pg_ctl", "-D", str(self.directory / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.directory, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    async def new_database(self) -> str:
        """The URL of a new, empty database: one per test, so tests never see each other's rows."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        conn = await asyncpg.connect(self.url())
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()
        return self.url(name)

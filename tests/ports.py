"""A free loopback port for a server a test starts itself (a bot process, PostgreSQL, an MCP server).

The port is probed, then bound later by another process, so two test workers (pytest-xdist) must
never pick the same one: each worker picks from its own slice of 10000-32767, below Linux's
ephemeral range (32768-60999) where the port-0 binds of in-process fake servers land.
"""

from __future__ import annotations

import os
import random
import socket

FIRST, END = 10_000, 32_768


def free_port() -> int:
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) if worker.isdigit() else 0
    span = (END - FIRST) // max(count, 1)
    low = FIRST + (index % max(count, 1)) * span
    for _ in range(100):
        port = random.randrange(low, low + span)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {low}-{low + span - 1}")

"""Throughput with one, two and three bot processes on one PostgreSQL (tests/cluster.py's setup).

For each count, the processes start on a new database behind the round-robin load balancer, the
model answers after a fixed latency (an OpenAI-compatible fake, through langchain-openai), and a
burst of messages (each channel's in order, the channels at once) is sent as signed Slack events.
Answered messages per second run from the first send to the last answer posted. During the burst
the CPU time of every bot process, of the PostgreSQL server (the postmaster and its backends) and
of this process (the load balancer, the fake Slack and the fake model) is read from /proc, and the
peak number of model calls in flight is counted: a process runs at most `[storage]
max_rounds_at_once` rounds at once. So are PostgreSQL's client connections to the bench's database,
sampled every 0.1 s from the first process's start to the last one's stop. The verdict names what
ran out first.

`python bench/scale.py` prints the table and rewrites it in docs/benchmarks.md (`--no-docs`: only prints).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import commit, rewrite_block  # noqa: E402
from bot.settings import StorageSection  # noqa: E402
from tests.chaos import MAX_CONNECTIONS  # noqa: E402
from tests.cluster import BotProcess, LoadBalancer, SlowModel, bot_processes  # noqa: E402
from tests.fakes.slack_api import FakeSlackApi  # noqa: E402
from tests.fakes.slack_payloads import envelope, message  # noqa: E402
from tests.postgres_server import PostgresServer  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
ROUNDS_AT_ONCE = StorageSection().max_rounds_at_once  # per process, the default
CORES = os.cpu_count() or 1


@dataclass
class Measured:
    processes: int
    messages: int
    seconds: float
    bot_cpu: list[float]  # % of one core, each process
    postgres_cpu: float
    harness_cpu: float
    peak_in_flight: int
    machine_cpu: float  # % of all cores busy, whoever used them
    peak_connections: int  # PostgreSQL client connections of the bot processes, sampled every 0.1 s

    @property
    def per_second(self) -> float:
        return self.messages / self.seconds


def cpu_of(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, every process of every user (/proc/stat)."""
    numbers = [float(n) for n in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = numbers[3] + numbers[4]  # idle, iowait
    return sum(numbers) - idle, sum(numbers)


def postgres_cpu(server: PostgresServer) -> float:
    """CPU seconds of the postmaster and its live children (backends, writer, WAL writer)."""
    postmaster = int((server.directory / "data" / "postmaster.pid").read_text().split()[0])
    total = cpu_of(postmaster)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == postmaster:
                total += cpu_of(int(entry.name))
    return total


async def wait_answered(slack: FakeSlackApi, count: int, timeout: float) -> None:
    def answered() -> int:
        return sum(1 for post in slack.delivered_posts() if "(on C" in (post.get("text") or ""))

    deadline = time.monotonic() + timeout
    while answered() < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{answered()} of {count} answered")
        await asyncio.sleep(0.05)


async def count_connections(server: PostgresServer, database_url: str, peak: list[int], stop: asyncio.Event) -> None:
    """The most client connections to the bench's database seen while it runs (this sampler's own not counted)."""
    database = database_url.rsplit("/", 1)[1]
    conn = await asyncpg.connect(server.url())
    try:
        while not stop.is_set():
            count = await conn.fetchval(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = $1",
                database,
            )
            peak[0] = max(peak[0], int(count))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.1)
    finally:
        await conn.close()


async def burst(balancer: LoadBalancer, channels: int, per_channel: int, label: str) -> None:
    async def channel(number: int) -> None:
        name = f"C{label}{number:03d}"
        for n in range(per_channel):
            text = f"Sage, C{number} message {n}: what do you think?"
            ts = f"{1_700_000_000 + number * 1000 + n}.{len(label):06d}"
            body = json.dumps(envelope(message(text, ts, channel=name), f"Ev{name}x{n}"))
            delivery = await balancer.send(body, "application/json")
            assert delivery.delivered, f"{name} message {n} was not delivered"

    await asyncio.gather(*(channel(number) for number in range(channels)))


async def measure(
    server: PostgresServer, root: Path, processes: int, channels: int, per_channel: int, latency: float
) -> Measured:
    database_url = await server.new_database()
    async with FakeSlackApi() as slack, SlowModel(latency=latency) as model, aiohttp.ClientSession() as http:
        bots: list[BotProcess] = bot_processes(
            root / f"n{processes}", processes, database_url, slack.api_url, model.base_url, {}
        )
        peak, stop_counting = [0], asyncio.Event()
        counting = asyncio.create_task(count_connections(server, database_url, peak, stop_counting))
        try:
            for bot in bots:
                await bot.start()
            balancer = LoadBalancer(bots, http)
            await burst(balancer, channels, 1, "w")  # warm-up: channels created, connections open
            await wait_answered(slack, channels, timeout=300)
            slack.calls.clear()
            model.busy_peak = 0
            bots_before = [bot.cpu_seconds() for bot in bots]
            postgres_before, harness_before = postgres_cpu(server), time.process_time()
            machine_before = machine_busy()
            started = time.monotonic()
            await burst(balancer, channels, per_channel, "m")
            await wait_answered(slack, channels * per_channel, timeout=600)
            seconds = time.monotonic() - started
            return Measured(
                processes=processes,
                messages=channels * per_channel,
                seconds=seconds,
                bot_cpu=[
                    100 * (bot.cpu_seconds() - before) / seconds for bot, before in zip(bots, bots_before, strict=True)
                ],
                postgres_cpu=100 * (postgres_cpu(server) - postgres_before) / seconds,
                harness_cpu=100 * (time.process_time() - harness_before) / seconds,
                peak_in_flight=model.busy_peak,
                machine_cpu=busy_share(machine_before, machine_busy()),
                peak_connections=peak[0],
            )
        finally:
            await asyncio.gather(*(bot.stop() for bot in bots))
            stop_counting.set()
            await counting


def busy_share(before: tuple[float, float], after: tuple[float, float]) -> float:
    return 100 * (after[0] - before[0]) / max(after[1] - before[1], 1.0)


def verdict(row: Measured, latency: float) -> str:
    busy = sum(row.bot_cpu) + row.postgres_cpu + row.harness_cpu
    lock_cap = ROUNDS_AT_ONCE * row.processes
    if row.machine_cpu >= 85:
        return f"CPU: the machine was {row.machine_cpu:.0f}% busy, {busy / CORES:.0f}% of it ours"
    if busy >= 0.85 * 100 * CORES:
        heaviest = max(
            ("the bot processes", sum(row.bot_cpu)),
            ("PostgreSQL", row.postgres_cpu),
            ("the harness", row.harness_cpu),
            key=lambda kv: kv[1],
        )
        return f"CPU: {busy:.0f}% of {100 * CORES}% in use, most of it {heaviest[0]}"
    if row.peak_in_flight >= lock_cap:
        return (
            f"rounds: {row.peak_in_flight} model calls in flight = {ROUNDS_AT_ONCE} rounds x {row.processes} processes"
        )
    ideal = row.peak_in_flight / latency
    return f"the model's latency: {row.peak_in_flight} calls in flight at most, {ideal:.0f}/s at {latency} s each"


def table(rows: list[Measured], latency: float, load: str) -> str:
    base = rows[0].per_second
    lines = [
        f"Machine: {platform.processor() or platform.machine()}, {CORES} cores, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, 1-minute load {load} at the start (shared machine). "
        f"Model latency {latency} s. Commit {commit()}, 1 run.",
        "",
        "| processes | answered/s | ratio to 1 | CPU per bot process | PostgreSQL CPU | harness CPU | model calls in flight (peak) | PostgreSQL connections (peak) | limit |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        cpu = ", ".join(f"{c:.0f}%" for c in row.bot_cpu)
        lines.append(
            f"| {row.processes} | {row.per_second:.1f} ({row.messages} in {row.seconds:.1f} s) | {row.per_second / base:.2f} "
            f"| {cpu} | {row.postgres_cpu:.0f}% | {row.harness_cpu:.0f}% | {row.peak_in_flight} | {row.peak_connections} | {verdict(row, latency)} |"
        )
    return "\n".join(lines)


async def run(counts: list[int], channels: int, per_channel: int, latency: float) -> list[Measured]:
    server = await asyncio.to_thread(PostgresServer.start, max_connections=MAX_CONNECTIONS)
    try:
        root = Path(tempfile.mkdtemp(prefix="roundtable-scale-"))
        return [await measure(server, root, n, channels, per_channel, latency) for n in counts]
    finally:
        await asyncio.to_thread(server.stop)


def main() -> int:
    parser = argparse.ArgumentParser(description="answered messages per second with 1, 2 and 3 processes")
    parser.add_argument("--channels", type=int, default=60)
    parser.add_argument("--per-channel", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per model call")
    parser.add_argument("--no-docs", "--no-readme", dest="no_docs", action="store_true", help="only print the table")
    args = parser.parse_args()
    load = f"{os.getloadavg()[0]:.2f}"
    rows = asyncio.run(run([1, 2, 3], args.channels, args.per_channel, args.latency))
    text = table(rows, args.latency, load)
    print(text)
    if not args.no_docs:
        rewrite_block(text, name="scale")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Signed Slack message events over HTTP, each timed from its send until the bot's HTTP 200 ack.

The sender runs as a process of its own (`python -m bench.slack_probe EVENTS_URL`), so its work
never delays the bot it measures. It speaks one JSON object a line: it reads {"count": N,
"interval": S}, sends N events into the probe channel, one every S seconds without waiting for
earlier answers, and writes {"latencies": [seconds, ...], "failures": [status, ...]}.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from tests.fakes.slack_api import TEAM_ID
from tests.fakes.slack_payloads import CHANNEL, envelope, message, signed_headers

REPO = Path(__file__).resolve().parents[1]
PROBE_CHANNEL_KEY = f"slack:{TEAM_ID}:{CHANNEL}"  # the channel every probe message goes to


@dataclass(frozen=True)
class Probes:
    latencies: list[float]
    failures: list[int]  # HTTP statuses other than 200


# -- the sender process ----------------------------------------------------------------------------


class Sender:
    def __init__(self, events_url: str, http: aiohttp.ClientSession) -> None:
        self.events_url = events_url
        self.http = http
        self.sent = 0

    async def send_one(self) -> tuple[float, int]:
        self.sent += 1
        ts = f"1700000000.{self.sent:06d}"
        body = json.dumps(envelope(message(f"probe {self.sent}", ts), f"EvProbe{self.sent:06d}"))
        headers = signed_headers(body, "application/json")
        start = time.perf_counter()
        async with self.http.post(self.events_url, data=body.encode(), headers=headers) as response:
            await response.read()
            return time.perf_counter() - start, response.status

    async def send(self, count: int, interval: float) -> Probes:
        loop = asyncio.get_running_loop()
        begin = loop.time()
        sends = []
        for number in range(count):
            await asyncio.sleep(max(0.0, begin + number * interval - loop.time()))
            sends.append(asyncio.create_task(self.send_one()))
        answers = await asyncio.gather(*sends)
        return Probes([seconds for seconds, _ in answers], [status for _, status in answers if status != 200])


async def serve(events_url: str) -> None:
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    connector = aiohttp.TCPConnector(limit=0)  # open-loop: a slow ack must not hold back the next send
    async with aiohttp.ClientSession(connector=connector) as http:
        sender = Sender(events_url, http)
        while line := await reader.readline():
            order = json.loads(line)
            probes = await sender.send(order["count"], order["interval"])
            print(json.dumps({"latencies": probes.latencies, "failures": probes.failures}), flush=True)


# -- the benchmark's side --------------------------------------------------------------------------


class SlackProber:
    """Drives the sender process from the benchmark's event loop."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    @asynccontextmanager
    async def started(cls, events_url: str) -> AsyncIterator[SlackProber]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.slack_probe",
            events_url,
            cwd=REPO,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            yield cls(process)
        finally:
            assert process.stdin is not None
            process.stdin.close()
            await process.wait()

    async def probe(self, count: int, interval: float) -> Probes:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"count": count, "interval": interval}).encode() + b"\n")
        await self.process.stdin.drain()
        answer = await self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"the Slack prober exited with code {await self.process.wait()}")
        parsed = json.loads(answer)
        return Probes(parsed["latencies"], parsed["failures"])


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))

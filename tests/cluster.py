"""Several real bot processes on one PostgreSQL, behind a round-robin load balancer, as deployed.

`make chaos` (tests/chaos.py) and `make bench` (bench/scale.py) build on this:

- **The processes** are `python -m bot` in Slack HTTP mode, each with its own port, token
  (`xoxb-<name>`, so the fake Slack tells their calls apart) and data directory, all on one
  PostgreSQL database (tests/postgres_server.py: a throwaway server).
- **The model** is the OpenAI-compatible provider (langchain-openai, its real wire format) against
  `SlowModel`, a fake Chat Completions server that answers after a fixed latency. A persona answers
  the newest human line, naming its tag ("C07 message 3"); a line that says "publish" gets a
  `publish_post` tool call, which waits for approval, and the follow-up once it ran says the request
  is in (it answers no newer line: that line's own round does).
- **The load balancer** spreads signed Slack requests over the processes round-robin, with no health
  checks, as Slack's retries meet it: a delivery that fails (refused connection, an error status,
  or no answer within Slack's 3 seconds) is sent again with `X-Slack-Retry-Num` and
  `X-Slack-Retry-Reason`, up to three retries. Slack spaces them out over minutes (at once, after
  1 minute, after 5); here they come after 0, 1 and 2 seconds, so a run takes minutes, not hours.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from tests.conftest import REPO, write_config
from tests.fakes.loopback import LoopbackServer
from tests.fakes.openai_server import chat_completion
from tests.fakes.slack_payloads import SIGNING_SECRET, signed_headers
from tests.ports import free_port

SLACK_ACK_TIMEOUT = 3.0  # seconds Slack waits for the HTTP 200 before it retries
RETRY_DELAYS = (0.0, 1.0, 2.0)  # Slack's three retries (really: at once, after 1 minute, after 5)
TAG = re.compile(r"\b(C\d+ message \d+)\b")
REPLIES = (
    "That deserves a closer look before anyone commits",
    "I would start small and measure what happens",
    "The risky part is the schedule, not the idea",
    "Let us write down what success would look like",
    "Someone should ask the people who use it daily",
    "I see two options and neither is obviously wrong",
    "Cost matters less here than getting it right",
    "We tried something close last year and learned a lot",
    "Worth doing, if we keep the first version tiny",
    "I am not convinced yet, show me one example",
    "Fine by me, as long as we can undo it",
    "Good question, and the answer depends on timing",
)
# A follow-up's own words: were it one of REPLIES, the follow-up on message 4's action and the answer
# to message 9 would say the same sentence, and the review rightly refuses to post a repeat.
FOLLOW_UPS = (
    "Noted, I will keep an eye on it",
    "Handled, tell me if anything looks off",
    "That part is taken care of now",
    "Sorted, and I wrote down where it went",
)


# -- the model -------------------------------------------------------------------------------------


def newest_human_line(messages: list[dict[str, Any]]) -> str:
    """The newest line a person wrote, as the prompt shows it ("Ana: …"; others' lines start with "[")."""
    for message in reversed(messages):
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        if message.get("role") == "user" and not text.startswith("["):
            return text
    return ""


def called_since_the_human_line(messages: list[dict[str, Any]]) -> bool:
    """Whether this persona already called a tool (or got its result) after the newest human line:
    then this call follows up on it, and must not ask again."""
    for message in reversed(messages):
        if message.get("role") == "tool" or message.get("tool_calls"):
            return True
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str) and not content.startswith("["):
            return False
    return False


def following_up(messages: list[dict[str, Any]]) -> bool:
    """Whether this call is the persona's follow-up on its action's result (after an approval) rather
    than its answer to a line: every human line names whom it asks, and the newest one does not name
    this persona. A follow-up speaks of the result; the newer line is answered by its own round."""
    system = next((str(m.get("content")) for m in messages if m.get("role") == "system"), "")
    named = re.search(r"You are ([^,]+),", system)
    return named is not None and named.group(1) not in newest_human_line(messages)


@dataclass
class SlowModel(LoopbackServer):
    """OpenAI-compatible Chat Completions that answer after `latency` seconds, many at a time."""

    latency: float = 0.8
    calls: int = 0
    busy: int = 0  # calls being answered now
    busy_peak: int = 0

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def build_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        return app

    async def _complete(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls += 1
        self.busy += 1
        self.busy_peak = max(self.busy_peak, self.busy)
        try:
            await asyncio.sleep(self.latency)
        finally:
            self.busy -= 1
        messages = body.get("messages", [])
        human = newest_human_line(messages)
        found = TAG.search(human)
        tag = found.group(1) if found else "nothing"
        number = int(tag.rsplit(" ", 1)[-1]) if found else 0
        call = None
        if called_since_the_human_line(messages) or following_up(messages):
            text = f"{FOLLOW_UPS[number % len(FOLLOW_UPS)]}; the request for {tag} is in."
        else:
            text = f"{REPLIES[number % len(REPLIES)]} (on {tag})."
            if found and "publish" in human and body.get("tools"):
                call = {"name": "publish_post", "args": {"channel": "news", "text": f"Launch note for {tag}"}}
        return web.json_response(chat_completion(text, str(body.get("model")), self.calls, call))


# -- the processes ---------------------------------------------------------------------------------


@dataclass
class BotProcess:
    name: str
    directory: Path
    port: int
    config: Path
    process: asyncio.subprocess.Process | None = None
    starts: int = 0
    ready: bool = False  # started and listening

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    @property
    def authorization(self) -> str:
        return f"Bearer xoxb-{self.name}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def start(self, timeout: float = 300) -> None:  # a start on a busy shared machine can take a minute
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "DISCORD_", "GOOGLE_"))}
        env.update(
            SLACK_BOT_TOKEN=f"xoxb-{self.name}",
            SLACK_SIGNING_SECRET=SIGNING_SECRET,
            OPENAI_API_KEY="sk-fake-chaos",
        )
        self.starts += 1
        self.ready = False
        with open(self.directory / "bot.log", "ab") as log:
            log.write(f"--- start {self.starts} at {time.time():.3f}\n".encode())
            log.flush()
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot", "--config", str(self.config), cwd=REPO, env=env, stdout=log, stderr=log
            )
        async with asyncio.timeout(timeout):
            while True:
                if self.process.returncode is not None:
                    raise RuntimeError(
                        f"{self.name} exited with {self.process.returncode}: see {self.directory}/bot.log"
                    )
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                except OSError:
                    await asyncio.sleep(0.05)
                    continue
                writer.close()
                self.ready = True
                return

    async def kill(self) -> None:
        """SIGKILL: no drain, no goodbye; whatever was in flight is cut."""
        self.ready = False
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
            await self.process.wait()

    async def stop(self, timeout: float = 30) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            try:
                await asyncio.wait_for(self.process.wait(), timeout)
            except TimeoutError:
                await self.kill()

    def cpu_seconds(self) -> float:
        """User plus system CPU time of the running process so far (Linux /proc)."""
        if not self.running or self.process is None:
            return 0.0
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bot_processes(
    root: Path, count: int, database_url: str, slack_api_url: str, model_url: str, sections: dict[str, Any]
) -> list[BotProcess]:
    """`count` configured (not started) processes sharing one database, the fake Slack and the model."""
    bots = []
    for number in range(1, count + 1):
        name = f"bot{number}"
        directory = root / name
        directory.mkdir(parents=True, exist_ok=True)
        port = free_port()
        merged: dict[str, dict[str, Any]] = {
            "storage": {"url": database_url},
            "slack": {"api_base_url": slack_api_url, "host": "127.0.0.1", "port": port},
            "llm": {
                "provider": "openai",
                "base_url": model_url,
                "model": "fake-slow-model",
                "moderator_model": "fake-slow-model",
                "requests_per_minute": 600_000,
                "backoff_seconds": 0.2,
            },
        }
        for section, values in sections.items():
            merged.setdefault(section, {}).update(values)
        bots.append(BotProcess(name, directory, port, write_config(directory, merged)))
    return bots


# -- the load balancer -----------------------------------------------------------------------------


@dataclass
class Delivery:
    """What became of one request: the attempts it took and the status of the last one."""

    attempts: int = 0
    status: int | None = None
    reasons: list[str] = field(default_factory=list)  # why each failed attempt failed

    @property
    def delivered(self) -> bool:
        return self.status == 200


@dataclass
class LoadBalancer:
    """Round-robin over `bots`, as Slack's requests reach a deployment behind a plain load balancer."""

    bots: list[BotProcess]
    http: aiohttp.ClientSession
    retry_delays: tuple[float, ...] = RETRY_DELAYS
    retries: int = 0
    undelivered: int = 0
    _turn: itertools.count = field(default_factory=itertools.count)

    async def send(self, body: str, content_type: str, *, slack_retries: bool = True) -> Delivery:
        """POST a signed body; Events API requests (`slack_retries`) are retried as Slack does."""
        delivery = Delivery()
        schedule = (None, *self.retry_delays) if slack_retries else (None,)
        for retry, delay in enumerate(schedule):
            if delay is not None:
                await asyncio.sleep(delay)
                self.retries += 1
            bot = self.bots[next(self._turn) % len(self.bots)]
            headers = signed_headers(body, content_type)
            if retry:
                headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": delivery.reasons[-1]}
            delivery.attempts += 1
            try:
                timeout = aiohttp.ClientTimeout(total=SLACK_ACK_TIMEOUT)
                async with self.http.post(bot.url, data=body.encode(), headers=headers, timeout=timeout) as response:
                    await response.read()
                    delivery.status = response.status
            except TimeoutError:
                delivery.status, reason = None, "http_timeout"
            except aiohttp.ClientError:
                delivery.status, reason = None, "connection_failed"
            else:
                if delivery.status == 200:
                    return delivery
                reason = "http_error"
            delivery.reasons.append(reason)
        self.undelivered += 1
        return delivery

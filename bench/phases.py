"""The engine benchmark's phases: each opens a fresh app, drives it and returns raw measurements."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from bench.harness import BenchApp, BenchModels, Mark, bench_app
from bench.slack_probe import PROBE_CHANNEL_KEY, SlackProber
from bot.slack.app import build_slack_app, make_web_client
from bot.slack.http_server import EVENTS_PATH, serving_http
from personas import Persona
from storage import history
from storage.records import LineKind
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_payloads import SIGNING_SECRET

MODERATED = {"moderation": {"enabled": True}}
FINISH = {"next_speaker": "FINISH", "reason": "everyone has spoken"}
QUESTION = "what should we launch next quarter, and why?"
PROBE_INTERVAL = 0.005  # seconds between Slack probe events
BOT_TOKEN = "xoxb-bench-token"  # the fake Slack accepts any token


@dataclass
class CallTally:
    """Model calls counted by the fake model, against what each message should cost."""

    messages: int = 0
    replies: int = 0
    persona_calls: int = 0
    moderator_calls: int = 0
    mismatches: int = 0

    def add(self, models: BenchModels, *, messages: int, replies: int, moderated: bool) -> None:
        """moderation off: one call per reply; on: one moderator call per reply (none for the last
        persona left to speak, whom the code picks; one for FINISH)."""
        persona_calls, moderator_calls = models.take_counts()
        expected_moderator = replies if moderated else 0
        self.mismatches += persona_calls != replies or moderator_calls != expected_moderator
        self.messages += messages
        self.replies += replies
        self.persona_calls += persona_calls
        self.moderator_calls += moderator_calls


# -- timing rounds ---------------------------------------------------------------------------------


def turn_overheads(start: Mark, posts: Sequence[Mark], end: Mark) -> list[float]:
    """Each turn runs from the previous post (the first from the human line) to its own post, the
    last one until the round is over; model time inside that span is not the engine's."""
    edges = [start, *posts[:-1], end]
    return [(b.at - a.at) - (b.model_seconds - a.model_seconds) for a, b in pairwise(edges)]


def participants(bench: BenchApp) -> list[Persona]:
    """The personas every new channel starts with."""
    return [bench.app.personas[persona_id] for persona_id in bench.app.config.settings.bot.participants]


async def moderated_round(bench: BenchApp, key: str, number: int, tally: CallTally) -> list[float]:
    """One human line; every participant speaks once, in rotating order, then FINISH. The moderator
    picks all but the last, who is the only one left."""
    names = [persona.display_name for persona in participants(bench)]
    order = names[number % len(names) :] + names[: number % len(names)]
    bench.models.decisions.extend([*({"next_speaker": n, "reason": "bench"} for n in order[:-1]), FINISH])
    posted = len(bench.port.posts[key])
    start = bench.port.mark()
    await bench.round(key, f"Message {number}: {QUESTION}")
    end = bench.port.mark()
    posts = bench.port.posts[key][posted:]
    if len(posts) != len(order) or bench.models.decisions:
        raise RuntimeError(f"{key}: round {number} posted {len(posts)} of {len(order)} turns")
    tally.add(bench.models, messages=1, replies=len(posts), moderated=True)
    return turn_overheads(start, posts, end)


async def moderated_rounds(
    bench: BenchApp, keys: Sequence[str], rounds: int, warmup: int, tally: CallTally
) -> dict[str, list[float]]:
    """Rounds taken in turn across `keys`, so that drift over time hits every channel alike."""
    overheads: dict[str, list[float]] = {key: [] for key in keys}
    for number in range(warmup + rounds):
        for key in keys:
            turns = await moderated_round(bench, key, number, tally)
            if number >= warmup:
                overheads[key].extend(turns)
    return overheads


async def seed(bench: BenchApp, key: str, count: int) -> None:
    """`count` stored lines, the human and each persona speaking in turn."""
    personas = [(p.id, p.display_name, LineKind.PERSONA) for p in participants(bench)]
    authors = [("U0ANA", "Ana", LineKind.HUMAN), *personas]
    for number in range(count):
        author_id, name, kind = authors[number % len(authors)]
        text = f"Earlier line {number}: a thought about the launch plan, the budget and who does what."
        await history.append_line(bench.app.db, key, kind, author_id, name, text)


# -- phases ----------------------------------------------------------------------------------------


async def growth_phase(rounds: int, warmup: int, stored: Sequence[int], tally: CallTally) -> dict[int, list[float]]:
    async with bench_app(BenchModels(), MODERATED) as bench:
        keys = {count: f"console:stored-{count}" for count in stored}
        for count, key in keys.items():
            await bench.say(key, "/moderate on")  # creates the channel with its participants
            await seed(bench, key, count)
        overheads = await moderated_rounds(bench, list(keys.values()), rounds, warmup, tally)
        return {count: overheads[key] for count, key in keys.items()}


def rss_bytes() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return float(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


async def burst(bench: BenchApp, label: str, channels: int, tally: CallTally) -> float:
    """One addressed message in each of `channels` new channels at once; seconds until the last reply."""
    keys = [f"console:{label}-{number}" for number in range(channels)]
    start = time.perf_counter()
    await asyncio.gather(*(bench.say(key, f"Sage, {QUESTION}") for key in keys))
    await bench.app.service.wait_idle()
    bench.check_answered(keys, 1)
    tally.add(bench.models, messages=channels, replies=channels, moderated=False)
    return max(bench.port.posts[key][0].at for key in keys) - start


async def memory_phase(channels: int, tally: CallTally) -> tuple[float, float]:
    """RSS before and after `channels` channels have each had one round."""
    async with bench_app(BenchModels()) as bench:
        before = rss_bytes()
        await burst(bench, "memory", channels, tally)
        return before, rss_bytes()


@asynccontextmanager
async def slack_endpoint(bench: BenchApp) -> AsyncIterator[str]:
    """The real bolt app on the bot's HTTP endpoint, its Web API calls going to a local fake Slack."""
    async with FakeSlackApi() as fake:
        client = make_web_client(BOT_TOKEN, fake.api_url)
        bot = build_slack_app(bench.app, bench.app.config.settings.slack, SIGNING_SECRET, BOT_TOKEN, client)
        async with serving_http(bot.bolt, "127.0.0.1", 0) as url:
            yield url + EVENTS_PATH
            await bot.wait_idle()
            await bot.close()


async def silence_probe_channel(bench: BenchApp) -> None:
    """Probe messages are stored and start a round, but nobody is left in the channel to answer."""
    for persona in participants(bench):
        await bench.say(PROBE_CHANNEL_KEY, f"/dismiss {persona.id}")


async def probed_burst(
    bench: BenchApp, prober: SlackProber, label: str, channels: int, window: float, tally: CallTally
) -> list[float]:
    """A burst while Slack events arrive every PROBE_INTERVAL for `window` seconds; their ack latencies."""
    probing = asyncio.create_task(prober.probe(count=round(window / PROBE_INTERVAL), interval=PROBE_INTERVAL))
    await burst(bench, label, channels, tally)
    probes = await probing
    if probes.failures:
        raise RuntimeError(f"Slack answered {len(probes.failures)} probes with {probes.failures[:3]}")
    return probes.latencies


async def load_phase(channels: int, latency: float, probed_runs: int, tally: CallTally) -> tuple[float, list[float]]:
    """Seconds until `channels` simultaneous messages are answered; then Slack ack latencies during
    `probed_runs` more such bursts."""
    async with (
        bench_app(BenchModels(latency=latency)) as bench,
        slack_endpoint(bench) as events_url,
        SlackProber.started(events_url) as prober,
    ):
        await silence_probe_channel(bench)
        await prober.probe(count=5, interval=PROBE_INTERVAL)  # the sender is up; bolt has called auth.test
        await burst(bench, "warmup", 1, tally)
        seconds = await burst(bench, "load", channels, tally)
        window = max(seconds * 1.2, latency + 0.1)  # probes cover a whole burst
        acks: list[float] = []
        for run in range(probed_runs):
            acks += await probed_burst(bench, prober, f"probed{run}", channels, window, tally)
        return seconds, acks

"""`make chaos`: three bot processes on one PostgreSQL, behind a round-robin load balancer, and one
of them SIGKILLed at random moments while 300 messages in 30 channels are answered and approvals
are decided (tests/cluster.py has the processes, the slow model and the load balancer).

Each channel gets 10 messages, one every 1 to 3 seconds as a person types them; every fifth asks
Nova to publish a launch note, which waits for approval. An approver clicks Approve on each request
through the load balancer, and clicks again when nothing happened after a while, as a person
would. Model calls take 0.8 s, so kills land in the middle of rounds. Every 2 to 6 seconds, while
all three run, one of them is killed with SIGKILL and started again.

Then, once all is quiet, it checks what people would see in Slack:
- every human message answered exactly once, and in order within its channel;
- every approval request posted once; every approved action run once (one post in #news) or
  reported "outcome unknown" (run at most once);
- no reply, request or action post lost or doubled.

It prints the counts, describes each lost or doubled item (stored? taken off the inbox? answered
in storage but never posted?), and exits 1 when anything is lost or doubled.
`python -m tests.chaos --help` lists the sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import asyncpg

from tests.cluster import TAG, BotProcess, LoadBalancer, SlowModel, bot_processes
from tests.fakes.slack_api import FakeSlackApi
from tests.fakes.slack_payloads import button_click, buttons_of, envelope, message
from tests.postgres_server import PostgresServer

APPROVER = "UAPPROVER"
MAX_CONNECTIONS = 100  # PostgreSQL's default
CONNECTION_BUDGET = 50  # client connections at the peak, for three processes and this harness
OUTBOX_CLAIM_SECONDS = 10
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
ANSWER = re.compile(r"\(on (C\d+ message \d+)\)")
LAUNCH = re.compile(r"Launch note for (C\d+ message \d+)")


@dataclass
class Options:
    processes: int = 3
    channels: int = 30
    per_channel: int = 10
    latency: float = 0.8
    kill_every: tuple[float, float] = (2.0, 6.0)
    typing_pause: tuple[float, float] = (1.0, 3.0)
    quiet_seconds: float = 30.0  # how long nothing new must happen before the run is judged
    seed: int = 25


@dataclass
class Run:
    options: Options
    slack: FakeSlackApi
    balancer: LoadBalancer
    bots: list[BotProcess]
    db: asyncpg.Pool
    rng: random.Random
    started: float = field(default_factory=time.monotonic)
    kills: list[tuple[float, str]] = field(default_factory=list)
    sent: dict[str, tuple[float, int]] = field(default_factory=dict)  # tag: (when, attempts)
    undelivered: list[str] = field(default_factory=list)
    clicks: int = 0
    peak_connections: int = 0  # PostgreSQL client connections, sampled every 0.2 s
    reclicks: int = 0
    sending_done: asyncio.Event = field(default_factory=asyncio.Event)

    def now(self) -> float:
        return time.monotonic() - self.started

    # -- people ------------------------------------------------------------------------------

    async def person_in(self, channel_number: int) -> None:
        channel = f"C{channel_number:02d}"
        for n in range(self.options.per_channel):
            tag = f"{channel} message {n}"
            if n % 5 == 4:
                text = f"Nova, {tag}: please publish the launch note for it."
            else:
                text = f"Sage, {tag}: what do you think we should do?"
            ts = f"{1_700_000_000 + channel_number * 1000 + n}.000100"
            body = json.dumps(envelope(message(text, ts, channel=channel), f"Ev{channel}x{n:03d}"))
            delivery = await self.balancer.send(body, JSON)
            self.sent[tag] = (self.now(), delivery.attempts)
            if not delivery.delivered:
                self.undelivered.append(tag)
            await asyncio.sleep(self.rng.uniform(*self.options.typing_pause))

    async def approver(self, stop: asyncio.Event) -> None:
        handled: set[str] = set()
        tasks: list[asyncio.Task[None]] = []
        while not stop.is_set():
            connections = await self.db.fetchval(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
            )
            self.peak_connections = max(self.peak_connections, int(connections))
            for request in self.approval_requests():
                if request["ts"] not in handled:
                    handled.add(request["ts"])
                    tasks.append(asyncio.create_task(self.approve(request)))
            await asyncio.sleep(0.2)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def approve(self, request: dict[str, Any]) -> None:
        """Click Approve; click again when the request is still pending 10 s later (the click was lost)."""
        [approve] = [b for b in buttons_of(request) if b["action_id"] == "approval_approve"]
        approval_id = int(approve["value"])
        await asyncio.sleep(self.rng.uniform(0.2, 1.5))
        for attempt in range(8):
            self.clicks += 1
            self.reclicks += attempt > 0
            payload = button_click(
                request,
                "approval_approve",
                APPROVER,
                response_url=self.slack.response_url(f"click{self.clicks}"),
                trigger=f"trigger.{approval_id}.{attempt}",
            )
            await self.balancer.send(urlencode({"payload": json.dumps(payload)}), FORM, slack_retries=False)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                status = await self.db.fetchval("SELECT status FROM approvals WHERE id = $1", approval_id)
                if status != "pending":
                    return
                await asyncio.sleep(0.3)

    # -- the chaos ---------------------------------------------------------------------------

    async def killer(self, stop: asyncio.Event) -> None:
        """Every 2 to 6 s, while all of them run, SIGKILL a random process and start it again in the
        background (a start takes seconds, up to a minute on a busy machine: meanwhile the others
        carry the load). One process is down at a time, as when one machine fails."""
        restarts: list[asyncio.Task[None]] = []
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), self.rng.uniform(*self.options.kill_every))
                break
            except TimeoutError:
                pass
            if not all(bot.ready for bot in self.bots):
                continue  # the last one killed is still starting
            victim = self.rng.choice(self.bots)
            await victim.kill()
            self.kills.append((self.now(), victim.name))
            restarts.append(asyncio.create_task(victim.start()))
        await asyncio.gather(*restarts)

    # -- what Slack shows --------------------------------------------------------------------

    def posts(self) -> list[dict[str, Any]]:
        return self.slack.delivered_posts()

    def approval_requests(self) -> list[dict[str, Any]]:
        delivered = [c for c in self.slack.calls_to("chat.postMessage") if c.status == 200 and c.error is None]
        return [{**c.args, "ts": c.answer["ts"]} for c in delivered if buttons_of(c.args)]

    def expected(self) -> tuple[list[str], list[str]]:
        tags = [
            f"C{c:02d} message {n}"
            for c in range(1, self.options.channels + 1)
            for n in range(self.options.per_channel)
        ]
        return tags, [tag for tag in tags if int(tag.rsplit(" ", 1)[1]) % 5 == 4]

    def complete(self) -> bool:
        tags, actions = self.expected()
        answered = {m.group(1) for post in self.posts() if (m := ANSWER.search(post.get("text") or ""))}
        launched = {
            m.group(1)
            for post in self.posts()
            if post.get("channel") == "news" and (m := LAUNCH.search(post.get("text") or ""))
        }
        return answered >= set(tags) and launched >= set(actions)

    async def wait_until_quiet(self, cap: float) -> None:
        """Until everything expected showed up, or nothing new reached Slack for quiet_seconds."""
        deadline = time.monotonic() + cap
        seen, last_change = len(self.slack.calls), time.monotonic()
        while time.monotonic() < deadline:
            if self.complete():
                await asyncio.sleep(3)  # a doubled post would arrive now
                return
            if len(self.slack.calls) != seen:
                seen, last_change = len(self.slack.calls), time.monotonic()
            elif time.monotonic() - last_change > self.options.quiet_seconds:
                return
            await asyncio.sleep(0.5)


@dataclass
class Verdict:
    lines: list[str]
    failures: int


async def judge(run: Run) -> Verdict:
    tags, actions = run.expected()
    answers: dict[str, list[int]] = defaultdict(list)  # tag: post indexes
    order: dict[str, list[int]] = defaultdict(list)  # channel: message numbers in post order
    requests: Counter[str] = Counter()
    launches: Counter[str] = Counter()
    for index, post in enumerate(run.posts()):
        text = post.get("text") or ""
        if post.get("channel") == "news" and (launch := LAUNCH.search(text)):
            launches[launch.group(1)] += 1
        elif buttons_of(post) and (asked := TAG.search(json.dumps(post.get("blocks")))):
            requests[asked.group(1)] += 1
        elif answer := ANSWER.search(text):
            tag = answer.group(1)
            answers[tag].append(index)
            if len(answers[tag]) == 1:
                order[tag.split(" ")[0]].append(int(tag.rsplit(" ", 1)[1]))
    lost = [tag for tag in tags if not answers[tag]]
    doubled = [tag for tag in tags if len(answers[tag]) > 1]
    out_of_order = sorted(channel for channel, numbers in order.items() if numbers != sorted(numbers))
    statuses = {
        TAG.search(row["args"]).group(1): row["status"]  # type: ignore[union-attr]
        for row in await run.db.fetch("SELECT status, args FROM approvals")
        if TAG.search(row["args"])
    }
    executed_once = [t for t in actions if statuses.get(t) == "executed" and launches[t] == 1]
    unknown = [t for t in actions if statuses.get(t) == "unknown" and launches[t] <= 1]
    run_twice = [t for t in actions if launches[t] > 1]
    not_run = [t for t in actions if t not in executed_once and t not in unknown and t not in run_twice]
    lost_requests = [t for t in actions if not requests[t]]
    doubled_requests = [t for t in actions if requests[t] > 1]

    o = run.options
    lines = [
        f"chaos: {len(tags)} messages in {o.channels} channels, {o.processes} processes on one PostgreSQL, "
        f"model latency {o.latency} s, {len(run.kills)} kills (SIGKILL), {run.balancer.retries} Slack retries, "
        f"{len(run.undelivered)} undelivered, {run.clicks} approval clicks ({run.reclicks} again), "
        f"{run.now():.0f} s",
        f"messages: {len(tags) - len(lost) - len(doubled)} answered once, doubles {len(doubled)}, lost {len(lost)}, "
        f"channels out of order {len(out_of_order)}",
        f"approval requests: {len(actions) - len(lost_requests) - len(doubled_requests)} posted once, "
        f"doubles {len(doubled_requests)}, lost {len(lost_requests)}",
        f"approved actions: {len(executed_once)} ran once, {len(unknown)} reported outcome unknown, "
        f"run twice {len(run_twice)}, not run {len(not_run)}",
        "kills: " + ", ".join(f"{name} at {at:.1f} s" for at, name in run.kills),
        f"PostgreSQL client connections: {run.peak_connections} at the peak "
        f"(at most {CONNECTION_BUDGET} for {o.processes} processes and this harness)",
    ]
    for tag in lost:
        lines.append(f"  lost: {tag}: {await why_lost(run, tag)}")
    for tag in doubled:
        lines.append(f"  doubled: {tag}: answered {len(answers[tag])} times")
    for channel in out_of_order:
        lines.append(f"  out of order: {channel}: answers came for messages {order[channel]}")
    for tag in not_run + run_twice + lost_requests + doubled_requests:
        lines.append(
            f"  action {tag}: status {statuses.get(tag, 'never requested')}, "
            f"{requests[tag]} request(s) posted, {launches[tag]} post(s) in #news"
        )
    failures = len(lost) + len(doubled) + len(out_of_order) + len(run_twice) + len(not_run)
    failures += len(lost_requests) + len(doubled_requests) + len(run.undelivered)
    if o.processes <= 3 and run.peak_connections > CONNECTION_BUDGET:
        lines.append(f"  too many connections: {run.peak_connections}, over {CONNECTION_BUDGET}")
        failures += 1
    return Verdict(lines, failures)


async def why_lost(run: Run, tag: str) -> str:
    """Where a message's trail ends: never stored, waiting in the inbox, or taken by a round that never answered."""
    sent_at, attempts = run.sent.get(tag, (0.0, 0))
    row = await run.db.fetchrow("SELECT id, channel_key FROM lines WHERE kind = 'human' AND text LIKE $1", f"%{tag}:%")
    where = f"sent at {sent_at:.1f} s ({attempts} attempt(s))"
    if row is None:
        return f"{where}, never stored"
    if await run.db.fetchval("SELECT 1 FROM inbox WHERE line_id = $1", row["id"]):
        return f"{where}, stored, still waiting in the inbox"
    answered = await run.db.fetchval(
        "SELECT COUNT(*) FROM lines WHERE kind = 'persona' AND channel_key = $1 AND text LIKE $2",
        row["channel_key"],
        f"%(on {tag})%",
    )
    if answered:
        return f"{where}, stored and answered in storage, but the answer was never posted"
    near = [f"{name} at {at:.1f} s" for at, name in run.kills if sent_at - 1 <= at <= sent_at + 30]
    # What the channel's personas and markers said next: a reply whose words were dropped (calls
    # only), a follow-up that answered it, a notice of a failed turn.
    after = await run.db.fetch(
        "SELECT author_name, text FROM lines WHERE channel_key = $1 AND id > $2 AND kind <> 'human' "
        "ORDER BY id LIMIT 6",
        row["channel_key"],
        row["id"],
    )
    trail = "; ".join(f"{r['author_name']}: {r['text'][:60] or '(tool calls only)'}" for r in after) or "nothing"
    return (
        f"{where}, stored, taken off the inbox by a round that never answered "
        f"(kills after it: {', '.join(near) or 'none'}; then in the channel: {trail})"
    )


async def chaos(options: Options, root: Path) -> Verdict:
    # Each process holds at most bot.persistence.CONNECTIONS_PER_PROCESS connections (statements,
    # its locks' session, checkpoints, timers), so three fit PostgreSQL's default max_connections.
    server = await asyncio.to_thread(PostgresServer.start, max_connections=MAX_CONNECTIONS)
    try:
        database_url = await server.new_database()
        async with (
            FakeSlackApi() as slack,
            SlowModel(latency=options.latency) as model,
            aiohttp.ClientSession() as http,
        ):
            sections = {
                "approvals": {"approvers": {"slack": [APPROVER]}, "timeout_minutes": 60},
                # A killed process's posts are taken over by the others after this lease: well within
                # the quiet time the run waits for before it judges.
                "outbox": {"claim_seconds": OUTBOX_CLAIM_SECONDS},
            }
            bots = bot_processes(root, options.processes, database_url, slack.api_url, model.base_url, sections)
            for bot in bots:  # one at a time: the first creates the tables
                await bot.start()
            pool = await asyncpg.create_pool(database_url, min_size=1, max_size=4)
            run = Run(options, slack, LoadBalancer(bots, http), bots, pool, random.Random(options.seed))
            stop_killing, stop_approving = asyncio.Event(), asyncio.Event()
            try:
                killer = asyncio.create_task(run.killer(stop_killing))
                approver = asyncio.create_task(run.approver(stop_approving))
                await asyncio.gather(*(run.person_in(c) for c in range(1, options.channels + 1)))
                # Keep killing while the last rounds and approvals run, then let it settle.
                await asyncio.sleep(options.per_channel * options.latency)
                stop_killing.set()
                await killer
                await run.wait_until_quiet(cap=300)
                stop_approving.set()
                await approver
                return await judge(run)
            finally:
                await pool.close()
                await asyncio.gather(*(bot.stop() for bot in bots))
    finally:
        await asyncio.to_thread(server.stop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    defaults = Options()
    parser.add_argument("--processes", type=int, default=defaults.processes)
    parser.add_argument("--channels", type=int, default=defaults.channels)
    parser.add_argument("--per-channel", type=int, default=defaults.per_channel)
    parser.add_argument("--latency", type=float, default=defaults.latency, help="seconds per model call")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--keep", action="store_true", help="keep the processes' logs and configs")
    args = parser.parse_args(argv)
    options = Options(args.processes, args.channels, args.per_channel, args.latency, seed=args.seed)
    root = Path(tempfile.mkdtemp(prefix="roundtable-chaos-"))
    verdict = asyncio.run(chaos(options, root))
    print("\n".join(verdict.lines))
    if verdict.failures or args.keep:
        print(f"logs: {root}/bot*/bot.log")
    else:
        shutil.rmtree(root, ignore_errors=True)
    print("chaos: PASS" if not verdict.failures else f"chaos: FAIL ({verdict.failures} problems)")
    return 1 if verdict.failures else 0


if __name__ == "__main__":
    sys.exit(main())

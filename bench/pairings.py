"""Roundtable against AutoGen's SelectorGroupChat, like for like (bench/engine.py's ratio rows).

Both sides call the one ModelDouble (same answers, same cost per call) and are timed the same way:
from the human line until the round is over, divided by its three persona turns; nothing is
subtracted on either side. Two pairings: nothing persisted (Roundtable's storage in in-memory
SQLite databases, AutoGen's team in memory) and everything persisted (Roundtable's SQLite files;
AutoGen saving its team's state after every round into an SQLite file opened with the same
settings). AutoGen's histories are bounded at the number of messages Roundtable's persona window
holds once full, so neither side's cost grows with the run. The four sides take runs in turn
(ours, theirs; ours, theirs), `runs` times, each of `run_rounds` rounds."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bench.harness import BenchApp, bench_app
from bench.model_double import DoubleModels, ModelDouble
from bench.phases import MODERATED, QUESTION, CallTally, moderated_round

LINES_PER_ROUND = 4  # the human line and three replies
MOST_FILLING_ROUNDS = 400  # a window that is still growing after these is a bug, not a long warmup


class Side(Protocol):
    async def round(self, number: int) -> float:
        """One round; seconds per persona turn."""
        ...


@dataclass
class OurSide:
    bench: BenchApp
    tally: CallTally
    key: str = "console:pairing"

    async def round(self, number: int) -> float:
        turns = await moderated_round(self.bench, self.key, number, self.tally)
        return sum(turns) / len(turns)  # the turns run post to post: together, the whole round


@dataclass
class Runs:
    """One side's measured runs: seconds per persona turn, one list per run, and its model calls."""

    side: Side
    double: ModelDouble
    runs: list[list[float]] = field(default_factory=list)
    calls: int = 0
    rounds: int = 0

    async def warm(self, numbers: range) -> None:
        for number in numbers:
            await self.side.round(number)

    async def run(self, numbers: range) -> None:
        calls = self.double.calls
        self.runs.append([await self.side.round(number) for number in numbers])
        self.calls += self.double.calls - calls
        self.rounds += len(numbers)


@dataclass
class Pairing:
    ours: Runs
    theirs: Runs


@dataclass
class Comparison:
    in_memory: Pairing
    persisted: Pairing
    window: int  # messages in Roundtable's full persona window: AutoGen's bound
    warmup: int  # rounds each side had before the runs
    cost: float  # seconds per model call


@asynccontextmanager
async def peer_side(double: ModelDouble, window: int, database: Path | None) -> AsyncIterator[Side]:
    from bench.peer import autogen_peer  # only now: importing AutoGen earlier would add to the memory phase's RSS

    async with autogen_peer(double, window, database) as peer:

        class TheirSide:
            async def round(self, number: int) -> float:
                return await peer.round(f"Message {number}: {QUESTION}")

        yield TheirSide()


async def fill_window(side: OurSide) -> int:
    """Rounds until the persona window no longer holds every line: from then on its length, and so
    a turn's work, stays put. Returns the rounds taken."""
    models = side.bench.models
    assert isinstance(models, DoubleModels)
    for number in range(MOST_FILLING_ROUNDS):
        await side.round(number)
        if models.window < (number + 1) * LINES_PER_ROUND - LINES_PER_ROUND:
            return number + 1
    raise RuntimeError(f"the persona window still held every line after {MOST_FILLING_ROUNDS} rounds")


async def comparison_phase(runs: int, run_rounds: int, warmup: int, tally: CallTally, cost: float) -> Comparison:
    double = ModelDouble(cost)
    async with AsyncExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="roundtable-bench-autogen-")))
        ours_memory = OurSide(
            await stack.enter_async_context(bench_app(DoubleModels(double), MODERATED, in_memory=True)), tally
        )
        ours_saved = OurSide(await stack.enter_async_context(bench_app(DoubleModels(double), MODERATED)), tally)
        filled = max(await fill_window(ours_memory), await fill_window(ours_saved))
        models = ours_saved.bench.models
        assert isinstance(models, DoubleModels)
        window = models.window
        theirs_memory = await stack.enter_async_context(peer_side(double, window, None))
        theirs_saved = await stack.enter_async_context(peer_side(double, window, directory / "autogen.sqlite3"))
        sides = [
            Runs(ours_memory, double),
            Runs(theirs_memory, double),
            Runs(ours_saved, double),
            Runs(theirs_saved, double),
        ]
        start = MOST_FILLING_ROUNDS + filled + warmup  # past every round number used before the runs
        for side in sides:  # AutoGen's window fills in as many rounds as ours did; then everyone warms up alike
            filling = 0 if isinstance(side.side, OurSide) else filled
            await side.warm(range(start - filling - warmup, start))
        for run in range(runs):
            numbers = range(start + run * run_rounds, start + (run + 1) * run_rounds)
            for side in sides:
                await side.run(numbers)
        return Comparison(Pairing(sides[0], sides[1]), Pairing(sides[2], sides[3]), window, filled + warmup, cost)

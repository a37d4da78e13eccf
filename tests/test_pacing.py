"""Round starts are let in a few per loop iteration: every round still starts, first come first served,
and a round stopped while it waits keeps no other from starting."""

import asyncio

from bot.pacing import RoundStarts


async def test_every_waiting_round_starts_in_the_order_it_arrived() -> None:
    starts = RoundStarts(per_iteration=2)
    started: list[int] = []

    async def round_(number: int) -> None:
        await starts.turn()
        started.append(number)

    await asyncio.gather(*(round_(number) for number in range(9)))
    assert started == list(range(9))


async def test_a_few_rounds_start_per_loop_iteration() -> None:
    starts = RoundStarts(per_iteration=2)
    started: list[int] = []

    async def round_(number: int) -> None:
        await starts.turn()
        started.append(number)

    tasks = [asyncio.create_task(round_(number)) for number in range(6)]
    await asyncio.sleep(0)  # one iteration: the tasks begin, the first two are let in at once
    assert started == [0, 1]
    await asyncio.gather(*tasks)
    assert started == list(range(6))


async def test_a_round_stopped_while_waiting_keeps_no_other_from_starting() -> None:
    starts = RoundStarts(per_iteration=1)
    started: list[int] = []

    async def round_(number: int) -> None:
        await starts.turn()
        started.append(number)

    tasks = [asyncio.create_task(round_(number)) for number in range(4)]
    await asyncio.sleep(0)
    tasks[2].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert started == [0, 1, 3]

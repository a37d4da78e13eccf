"""The engine benchmark's AutoGen side, bounded like our window. AutoGen is the bench extra's, so this file
runs under `make bench-quick` (marker `peer`), where that extra is installed; `make test` leaves it out."""

from pathlib import Path
from typing import Any

import pytest

from bench.model_double import ModelDouble

pytestmark = pytest.mark.peer


def longest_list(state: Any) -> int:
    """The most items any list in a saved state holds: its messages, context or thread."""
    if isinstance(state, dict):
        return max((longest_list(value) for value in state.values()), default=0)
    if isinstance(state, list):
        return max([len(state), *(longest_list(item) for item in state)])
    return 0


async def test_autogen_saved_state_stops_growing_at_the_window_and_every_call_goes_to_the_double(tmp_path: Path):
    from bench.peer import autogen_peer  # the bench extra: imported here so make test collects nothing of it

    double = ModelDouble(cost=0.0)
    async with autogen_peer(double, window=8, database=tmp_path / "autogen.sqlite3") as peer:
        held = []
        for number in range(12):
            await peer.round(f"Message {number}")
            held.append(longest_list(await peer.team.save_state()))
        assert peer.store is not None
        row = await peer.store.fetch_one("SELECT state FROM team_state WHERE team = 'bench'")
    assert double.calls == 12 * 6 and double.replies == 12 * 3  # three replies, three picks a round
    assert held[:2] == [4, 8] and set(held[2:]) == {8}  # four lines a round: the window is full after two
    assert row is not None and "Message 11" in row[0] and "Message 0" not in row[0]

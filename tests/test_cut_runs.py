"""How start-up settles a run a stop cut short, decided in one place (bot/cut_runs.py): pure."""

from __future__ import annotations

from bot.cut_runs import Settle, recovery_way, settle_of, unobservable
from graph.action_marks import ActionRun


def test_posts_are_looked_up_what_running_twice_cannot_double_runs_again_and_the_rest_stays_unknown() -> None:
    assert settle_of("publish_post") is Settle.LOOK_UP
    assert settle_of("send_message") is Settle.LOOK_UP
    assert settle_of("schedule_post") is Settle.RUN_AGAIN
    assert settle_of("delete_post") is Settle.RUN_AGAIN
    assert settle_of("notes.write_note") is Settle.UNKNOWN
    assert unobservable("notes.write_note") == "an MCP tool's effect cannot be looked up"


def test_the_way_recovery_went_names_what_was_found_and_what_was_posted() -> None:
    found_all = ActionRun(1, looks_first=True, pieces=2, found=2)
    none = ActionRun(1, looks_first=True, pieces=1, found=0)
    some = ActionRun(1, looks_first=True, pieces=3, found=1)
    assert recovery_way("publish_post", found_all) == "after the restart: found already posted, not posted again"
    assert recovery_way("send_message", none) == "after the restart: not posted before the stop, posted now"
    assert recovery_way("publish_post", some) == (
        "after the restart: 1 of 3 messages had been posted, the other 2 posted now"
    )
    assert recovery_way("schedule_post", none).startswith("after the restart: scheduled again")

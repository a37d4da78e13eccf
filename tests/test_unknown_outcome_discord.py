"""An unknown outcome on Discord: the request offers [Run again] and [Close] (persistent buttons,
working after a restart), and an approver's click runs it once, however often it is clicked. The
real discord.py client against the fake Discord REST and gateway; the state a kill leaves between
a run's claim and its outcome is written to the database, as tests/test_durability.py does."""

from __future__ import annotations

import copy
from typing import Any

from storage import approvals
from storage.records import ApprovalStatus
from tests.discord_harness import fake, open_bot, settle
from tests.fakes.discord_server import FakeDiscord
from tests.test_discord import APPROVERS, PUBLISH, approval_request, edits_of, followup_of, news_posts

__all__ = ["fake", "open_bot"]  # the fixtures


def button_ids(message: dict[str, Any]) -> list[str]:
    return [c["custom_id"] for row in message.get("components") or [] for c in row["components"]]


async def test_discord_unknown_outcome_offers_run_again_and_one_click_runs_it_once(fake: FakeDiscord, open_bot) -> None:
    async with open_bot(sections=APPROVERS) as bot:
        await fake.send_message(PUBLISH)
        message_id, approval_id = await approval_request(fake)
        await settle(bot)
        async with bot.app.db.transaction() as tx:  # approved, its run claimed by a process now gone
            await tx.execute(
                "UPDATE approvals SET status = 'running', runner = 'gone', decided_by = 'Bea' WHERE id = ?",
                (approval_id,),
            )

    async with open_bot(sections=APPROVERS) as bot:  # start-up: a post that noted no mark cannot be looked up
        [shown] = await edits_of(fake, message_id, "outcome unknown")
        assert "no mark of where the channel stood was noted" in shown.json["content"]  # says why
        assert button_ids(shown.json) == [f"approval:{approval_id}:retry", f"approval:{approval_id}:close"]
        await settle(bot)
    seen = copy.deepcopy(fake.messages[message_id])  # the request as a second clicker still sees it

    async with open_bot(sections=APPROVERS) as bot:  # the buttons work after a restart
        await fake.click_button(message_id, f"approval:{approval_id}:retry")
        [final] = await edits_of(fake, message_id, "executed")
        await settle(bot)
        again = await fake.click_button(message_id, f"approval:{approval_id}:retry", as_seen=seen)
        told = await followup_of(fake, again)
        await settle(bot)
        done = await approvals.get(bot.app.db, approval_id)

    assert "has no unknown outcome" in told["content"]
    assert done is not None and done.status is ApprovalStatus.EXECUTED
    assert len(news_posts(fake)) == 1  # run once
    assert button_ids(final.json) == []

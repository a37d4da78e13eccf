"""Two `/task cancel rollback` at once ask for each undo once, on both backends (SQLite and
PostgreSQL): the rollbacks of a task are serialised and each undo is claimed once per original
action; a rejected undo may be asked for again. Through the real service and storage."""

from __future__ import annotations

import asyncio
import json

import pytest

from bot.approval_desk import Actor
from bot.inbound import Inbound
from storage import approvals

KEY = "console:undos"
YOU = Actor("you", "you")
PUBLISH = "!!act publish_post " + json.dumps({"channel": "news", "text": "We launched!"})


@pytest.fixture
def storage_url(any_backend: str) -> str:
    return any_backend


async def typed(app, text: str) -> str:
    reply = await app.service.handle(Inbound(KEY, "you", "you", text))
    await app.service.wait_idle()
    return reply.reply if reply is not None else ""


async def test_two_rollbacks_at_once_ask_for_each_undo_once_and_a_rejected_one_again(open_test_app) -> None:
    async with open_test_app() as app:
        await typed(app, f"/task Announce the launch {PUBLISH}")
        [original] = await approvals.pending(app.db)
        await app.service.approval_desk.decide(original.id, YOU, approve=True)
        await app.service.wait_idle()

        answers = await asyncio.gather(typed(app, "/task cancel rollback"), typed(app, "/task cancel rollback"))
        [undo] = await approvals.pending(app.db)  # one request for the one undo
        assert undo.action == "delete_post" and undo.call_id == f"undo-{original.id}"
        assert sorted(answers) == [
            "Nothing of task #1 is left to undo.",
            f"Rollback of task #1 waits for approval, newest first: #{undo.id} undoes #{original.id} publish_post.",
        ]

        await app.service.approval_desk.decide(undo.id, YOU, approve=False)
        await app.service.wait_idle()
        again = await typed(app, "/task cancel rollback")  # turned down: it may be asked for again, once
        [asked_again] = await approvals.pending(app.db)
        assert asked_again.id != undo.id and asked_again.call_id == undo.call_id
        assert again == (
            f"Rollback of task #1 waits for approval, newest first: #{asked_again.id} undoes #{original.id} publish_post."
        )
        assert await typed(app, "/task cancel rollback") == "Nothing of task #1 is left to undo."
        assert [a.id for a in await approvals.pending(app.db)] == [asked_again.id]

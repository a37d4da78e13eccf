"""The mailbox: note_to delivers a private note into one persona's history, bounded per recipient,
with drops counted and everything shown to approvers by /mailbox. The console runs for real
(scripted model: `!!act note_to {...}` makes the addressed persona call the tool), prompts are read
with `python -m bot prompt`, storage runs on both backends, and /mailbox runs on Slack and Discord too."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from graph.mailbox import note_line_ids, recipient_named
from graph.models.grounding import sent_by_the_addressee
from graph.models.local_actions import tool_call_from
from personas import load_personas
from storage import channels, mailbox
from storage.database import Database, open_database
from storage.mailbox import has_room
from tests.conftest import REPO, run_bot, run_console, write_config
from tests.discord_harness import settle
from tests.fakes import discord_payloads as dp
from tests.fakes.discord_server import FakeDiscord
from tests.slack_harness import APPROVER, SlackHarness

PERSONAS = load_personas(REPO / "personas")
KEY = "console:t"


def note(persona: str, text: str) -> str:
    """The scripted model's directive to call note_to. The name's first letter is a JSON escape, so the
    line does not address the recipient too (a persona named in a line answers in its round)."""
    unnamed = f"\\u{ord(persona[0]):04x}{persona[1:]}"
    return f'!!act note_to {{"persona": "{unnamed}", "text": "{text}"}}'


def prompt_of(config: Path, persona: str) -> str:
    result = run_bot("prompt", "--config", str(config), "--channel", "general", "--persona", persona)
    assert result.returncode == 0, result.stderr
    return result.stdout


def channel_lines(transcript: str) -> list[str]:
    """What the channel showed: persona lines and notices, not the console user's lines nor command replies."""
    return [line for line in transcript.splitlines() if not line.startswith(("[you]", "[system]"))]


# -- the pure rules -------------------------------------------------------------------------------


def test_a_mailbox_has_room_below_max_pending_only() -> None:
    assert has_room(0, 1) and has_room(4, 5)
    assert not has_room(5, 5) and not has_room(6, 5)


def test_a_recipient_is_named_by_id_or_display_name_and_must_be_present() -> None:
    present = [PERSONAS["nova"], PERSONAS["rex"]]
    assert recipient_named("rex", present) is PERSONAS["rex"]
    assert recipient_named(" @Rex ", present) is PERSONAS["rex"]
    assert recipient_named("sage", present) is None  # a persona, but not here
    assert recipient_named("", present) is None


def test_only_notes_count_as_notes_in_a_prompt() -> None:
    messages: list[BaseMessage] = [
        SystemMessage(content="[note from Sage] in the system text is not a note"),
        HumanMessage(content="Ana: [note from Sage] typed by a person", id="line-1"),
        HumanMessage(content="[note from Sage] The deadline moved", id="line-2"),
        AIMessage(content="[note from Sage] written by the persona itself", id="line-3"),
        HumanMessage(content="[system] Rex joined", id="line-4"),
        HumanMessage(content="[note from Nova] Budget is fine", id="line-9"),
    ]
    assert note_line_ids(messages) == [2, 9]


def test_the_embedded_models_note_comes_only_from_the_persona_the_line_speaks_to() -> None:
    line = "Ana: Sage, send Rex a note that the deadline moved to Friday"
    from_sage = '{"action": "note_to", "persona": "Rex", "text": "The deadline moved to Friday"}'
    from_rex = '{"action": "note_to", "persona": "Sage", "text": "The deadline moved to Friday"}'
    call = tool_call_from(from_sage, line, "Sage")
    assert call is not None and call["args"] == {"persona": "Rex", "text": "The deadline moved to Friday"}
    assert tool_call_from(from_rex, line, "Rex") is None  # Rex is named as the recipient, not asked to send
    assert sent_by_the_addressee({"channel": "news", "text": "x"}, line, "Rex")  # only notes are checked
    assert tool_call_from(from_sage.replace("Rex", "Pixel"), line, "Sage") is None  # not in the line


# -- storage, on both backends --------------------------------------------------------------------


@pytest.fixture
def storage_url(any_backend: str) -> str:
    return any_backend


@pytest.fixture
async def db(storage_url: str, tmp_path: Path):
    database = await open_database(storage_url or tmp_path / "db.sqlite3")
    await channels.ensure_channel(database, KEY, participants=["nova", "sage", "rex"], moderated=False)
    yield database
    await database.close()


async def post(db: Database, text: str, recipient: str = "rex") -> mailbox.Posted:
    return await mailbox.post_note(
        db, KEY, sender_id="sage", sender_name="Sage", recipient_id=recipient, text=text, max_pending=2
    )


async def test_a_full_mailbox_drops_and_counts_durably_and_a_delivery_makes_room(db: Database) -> None:
    first, second, third = [await post(db, f"note {n}") for n in (1, 2, 3)]
    assert first.note is not None and second.note is not None and third.note is None
    assert (third.pending, third.dropped) == (2, 1)
    assert (await post(db, "for nova", "nova")).note is not None  # each recipient has its own mailbox
    assert await mailbox.note_counts(db, KEY) == {"rex": (2, 1), "nova": (1, 0)}

    line_of_first = await db.fetch_one("SELECT line_id FROM notes WHERE id = ?", (first.note.id,))
    assert await mailbox.mark_delivered(db, KEY, "rex", [line_of_first[0]]) == 1
    assert await mailbox.mark_delivered(db, KEY, "rex", [line_of_first[0]]) == 0  # once
    fourth = await post(db, "note 4")
    assert fourth.note is not None and (fourth.pending, fourth.dropped) == (2, 1)
    shown = [(n.text, n.pending) for n in await mailbox.recent_notes(db, KEY, limit=10)]
    assert shown == [("note 1", False), ("note 2", True), ("for nova", True), ("note 4", True)]


# -- the console ------------------------------------------------------------------------------------


def test_a_note_reaches_only_its_recipients_prompt_without_approval_and_never_the_channel(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    transcript = run_console(
        config,
        "/approvals mode in-command\n"  # every action waits for a person: a note is no action on the world
        f"Sage, what do you make of the plan for this week? {note('Rex', 'The deadline moved to Friday')}\n"
        "/mailbox\n",
    )
    assert "[approval" not in transcript
    assert "[system] - Sage → Rex: The deadline moved to Friday (pending)" in transcript.splitlines()
    assert "[system] - Rex: 1 pending, 0 dropped (mailbox full)" in transcript.splitlines()
    assert not any("deadline" in line.lower() for line in channel_lines(transcript))

    rex = prompt_of(config, "rex")
    assert "--- human ---\n[note from Sage] The deadline moved to Friday\n" in rex
    for persona in ("nova", "sage"):
        assert "[note from" not in prompt_of(config, persona)
    assert "--- tool ---\nsent: only Rex reads it, at their next turn\n" in prompt_of(config, "sage")

    # Rex's turn reads it: the note is delivered, and stays in Rex's history.
    transcript = run_console(config, "Rex, anything new?\n/mailbox\n")
    assert "[system] - Sage → Rex: The deadline moved to Friday (delivered)" in transcript.splitlines()
    assert not any("deadline" in line.lower() for line in channel_lines(transcript))
    assert "[note from Sage] The deadline moved to Friday" in prompt_of(config, "rex")


def test_a_full_mailbox_drops_counts_and_shows_it_and_an_absent_recipient_is_a_tool_error(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mailbox": {"max_pending": 2}})
    transcript = run_console(
        config,
        "".join(f"Sage, about item {n}. {note('rex', f'Note {n}')}\n" for n in ("one", "two", "three"))
        + f"Sage, and Pixel? {note('pixel', 'Hello Pixel')}\n"
        + "/mailbox\n"
        + "Rex, what is new?\n"
        + f"Sage, about item four. {note('rex', 'Note four')}\n"
        + "/mailbox\n",
    )
    first, second = transcript.split("[you] /mailbox")[1:]
    assert "- Sage → Rex: Note one (pending)" in first and "- Sage → Rex: Note two (pending)" in first
    assert "Note three" not in first and "Hello Pixel" not in first
    assert "- Rex: 2 pending, 1 dropped (mailbox full)" in first
    assert "- Sage → Rex: Note one (delivered)" in second and "- Sage → Rex: Note four (pending)" in second
    assert "- Rex: 1 pending, 1 dropped (mailbox full)" in second

    rex = prompt_of(config, "rex")
    assert all(f"[note from Sage] Note {n}" in rex for n in ("one", "two", "four"))
    assert "[note from Sage] Note three" not in rex
    sage = prompt_of(config, "sage")
    assert "dropped: Rex already has 2 unread notes (the most is 2); this one was not delivered" in sage
    assert "error: 'pixel' is not in this conversation; a note goes to a persona present: Nova, Rex" in sage


def test_mailbox_is_for_approvers_only(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"bot": {"personas_dir": str(REPO / "personas"), "console_user": "guest"}})
    transcript = run_console(config, f"Sage, hello. {note('rex', 'Secret plan')}\n/mailbox\n")
    assert "[system] Only approvers can read the mailbox." in transcript.splitlines()
    assert "Secret plan (pending)" not in transcript


# -- Slack ------------------------------------------------------------------------------------------


async def test_slack_mailbox_slash_command_shows_notes_to_approvers_only(slack: SlackHarness) -> None:
    await slack.say(f"Sage, what do you think of the plan? {note('rex', 'Ask for numbers')}", "1700000300.000100")
    assert not any("[note from" in post["text"] for post in slack.posts())

    await slack.command("/mailbox", "")
    await slack.command("/mailbox", "", user_id=APPROVER)
    refused, shown = slack.replies_to_command()
    assert refused["text"] == "Only approvers can read the mailbox." and refused["response_type"] == "ephemeral"
    assert "- Sage → Rex: Ask for numbers (pending)" in shown["text"] and shown["response_type"] == "ephemeral"


# -- Discord ----------------------------------------------------------------------------------------


async def test_discord_mailbox_slash_command_answers_approvers_only(fake: FakeDiscord, open_bot: Any) -> None:
    async with open_bot() as bot:  # nobody is a Discord approver by default
        await fake.send_message(f"Sage, a thought. {note('rex', 'Ask for numbers')}")
        async with asyncio.timeout(30):  # the message comes through the gateway: until Sage's note is stored
            while not await bot.app.db.fetch_one("SELECT 1 FROM notes"):
                await asyncio.sleep(0.05)
        await settle(bot)
        asked = await fake.send_slash_command("mailbox", {}, permissions=dp.MEMBER_PERMISSIONS)
        [refused] = await fake.wait_for_calls("POST", rf"/webhooks/{dp.APPLICATION_ID}/interaction-token-{asked}")
    async with open_bot(sections={"approvals": {"approvers": {"discord": [str(dp.HUMAN_USER_ID)]}}}):
        asked = await fake.send_slash_command("mailbox", {}, permissions=dp.MEMBER_PERMISSIONS)
        [shown] = await fake.wait_for_calls("POST", rf"/webhooks/{dp.APPLICATION_ID}/interaction-token-{asked}")

    assert refused.json["flags"] == 64 and refused.json["content"] == "Only approvers can read the mailbox."
    assert shown.json["flags"] == 64 and "Sage → Rex: Ask for numbers (pending)" in shown.json["content"]

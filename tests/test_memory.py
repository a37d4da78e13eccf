"""Memory beyond the window (graph/memory.py): notes a persona keeps with `remember`, and the
running summary of what left its window, written from only the lines it witnessed. The console runs
for real (scripted model: `!!act remember {...}` makes the addressed persona call the tool), and
prompts are read with `python -m bot prompt`, exactly what the persona receives next."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from graph.memory import FACT_EXAMPLE, bounded, note_scope, summary_of
from graph.prompt import estimate_tokens
from storage import approvals
from storage.memory import Audience, NoteScope, seen_from
from tests.conftest import run_bot, run_console, write_config
from tests.discord_harness import settle
from tests.fakes import discord_payloads as dp
from tests.fakes.discord_server import FakeDiscord
from tests.slack_harness import SlackHarness

MEMBER = "UMEMBER"  # a Slack user who is neither a workspace admin nor an owner
REFUSAL = (
    "Only channel managers can use {command}: it needs Manage Channels on Discord, "
    "or a workspace admin or owner on Slack."
)


def remember(text: str) -> str:
    return f'!!act remember {{"text": "{text}"}}'


def prompt_of(config: Path, persona: str) -> str:
    result = run_bot("prompt", "--config", str(config), "--channel", "general", "--persona", persona)
    assert result.returncode == 0, result.stderr
    return result.stdout


def system_part(prompt: str) -> str:
    return prompt.split("--- system ---\n", 1)[1].split("\n--- ", 1)[0]


def memory_part(prompt: str) -> str:
    """The memory block: a message of its own after the system message, never part of it."""
    marker = "--- human ---\n[memory] "
    return "[memory] " + prompt.split(marker, 1)[1].split("\n--- ", 1)[0] if marker in prompt else ""


def notes_in(prompt: str) -> list[str]:
    """The notes the memory block shows, as "N. text"."""
    quoted = re.findall(r"^(\d+)\. \w+ noted: «(.*)»$", memory_part(prompt), flags=re.MULTILINE)
    return [f"{number}. {text}" for number, text in quoted]


def summary_in(prompt: str) -> str:
    found = re.search(
        r"^\w+'s own summary of this conversation before the lines below: «(.*)»$", memory_part(prompt), re.M
    )
    return found.group(1) if found else ""


def prompt_tokens_of(prompt: str) -> int:
    """The prompt's estimated tokens, message by message, as graph/prompt.py counts them."""
    parts = re.split(r"^--- \w+ ---$", prompt, flags=re.MULTILINE)[1:]
    return sum(estimate_tokens(part.strip("\n")) for part in parts)


# -- the pure rules -------------------------------------------------------------------------------


def test_notes_are_per_channel_unless_shared_and_a_shared_note_stays_in_its_tenant_and_audience() -> None:
    assert note_scope("slack:T1:C1", "channel") == NoteScope("slack:T1:C1", shared=False)
    assert note_scope("discord:42", "persona") == NoteScope("discord:42", shared=True)
    general, random = Audience("slack:T1:C1", "slack:T1", False), Audience("slack:T1:C2", "slack:T1", False)
    secret = Audience("slack:T1:G9", "slack:T1", True)
    assert seen_from(general, random, shared=True) and not seen_from(general, random, shared=False)
    assert seen_from(general, secret, shared=True)  # its people read the workspace's public channels
    assert not seen_from(secret, general, shared=True) and seen_from(secret, secret, shared=False)
    guild_a, guild_b = Audience("discord:1", "discord:A", False), Audience("discord:2", "discord:B", False)
    assert not seen_from(guild_a, guild_b, shared=True)
    unrecorded = Audience("discord:3")  # no tenant recorded: shares with nobody, either way
    assert not seen_from(unrecorded, Audience("discord:4"), shared=True)
    assert not seen_from(Audience("discord:3", "", False), Audience("discord:4", "", False), shared=True)


def test_a_summary_over_its_bound_keeps_its_newest_sentences() -> None:
    text = " ".join(f"Fact number {n} is true." for n in range(100))
    cut = bounded(text, 20)
    assert len(cut) <= 80 and cut.startswith("Fact number") and cut.endswith("Fact number 99 is true.")
    assert "Fact number 0 " not in cut


# -- notes ----------------------------------------------------------------------------------------


def test_remember_from_a_tool_call_keeps_a_note_in_the_next_prompt_and_says_it_in_the_channel(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    transcript = run_console(  # in the loop (the default): a note to oneself runs at once (tests/test_turn_actions.py)
        config, f"Sage, remember that the launch is on Friday. {remember('The launch is on Friday')}\n"
    )
    assert "[approval" not in transcript
    assert "[system] Sage noted: The launch is on Friday" in transcript.splitlines()
    sage = prompt_of(config, "sage")
    assert notes_in(sage) == ["1. The launch is on Friday"] and "The launch is on Friday" not in system_part(sage)
    assert "--- tool ---\nnoted: 'The launch is on Friday'" in sage
    assert notes_in(prompt_of(config, "rex")) == []  # Rex's notes are its own


def test_the_21st_note_drops_the_oldest_with_a_notice_and_forget_drops_one_by_number(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    script = "".join(f"Sage, note {n}. {remember(f'Fact {n}')}\n" for n in range(1, 22))
    transcript = run_console(config, script)
    assert "Sage keeps at most 20 notes: its oldest ('Fact 1') was dropped." in transcript
    noted = notes_in(prompt_of(config, "sage"))
    assert noted[0] == "1. Fact 2" and noted[-1] == "20. Fact 21" and "1. Fact 1" not in noted

    run_console(config, 'Sage, forget note 1. !!act remember {"forget": 1}\n')
    noted = notes_in(prompt_of(config, "sage"))
    assert noted[0] == "1. Fact 3" and noted[-1] == "19. Fact 21"


# -- summaries ------------------------------------------------------------------------------------


def test_after_300_lines_a_summary_keeps_a_fact_from_the_first_lines_and_the_prompt_fits_the_budget(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path)
    lines = [
        "Hello all, a quick question first.",
        "The boat is called Marigold and it sails from pier 9.",
        *(f"Line {n}: the weather stays mild and nothing else is new." for n in range(3, 301)),
    ]
    run_console(config, "\n".join(lines) + "\n", timeout=600)
    for persona in ("nova", "sage", "rex"):
        prompt = prompt_of(config, persona)
        assert "Marigold" in summary_in(prompt) and "pier 9" in summary_in(prompt)
        assert "Marigold" not in prompt.split(memory_part(prompt), 1)[1]  # it left the window long ago
        assert prompt_tokens_of(prompt) <= 3000


def test_a_late_joiner_has_no_summary_of_before_and_a_private_note_is_in_no_summary(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"history": {"token_budget": 1200}})
    note = '!!act note_to {"persona": "\\u0052ex", "text": "The password is tangerine"}'
    early = [
        "The boat is called Marigold.",
        f"Sage, pass a note on. {note}",
        *(f"Line {n}: mild weather again." for n in range(3, 60)),
    ]
    later = [f"Later line {n}: still mild." for n in range(60, 140)]
    run_console(config, "\n".join([*early, "/invite pixel", *later]) + "\n", timeout=600)
    pixel, rex, sage = (summary_in(prompt_of(config, p)) for p in ("pixel", "rex", "sage"))
    assert "Marigold" in sage and "Marigold" in rex
    assert pixel and "Marigold" not in pixel and "Line 3:" not in pixel  # it joined later
    # A private note is no part of any summary, not even its recipient's: /memory shows summaries to all.
    assert "tangerine" not in rex and "tangerine" not in sage and "tangerine" not in pixel


# -- /memory --------------------------------------------------------------------------------------


def test_memory_shows_summary_and_notes_and_a_manager_forgets_and_clears_announced_in_the_channel(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"history": {"token_budget": 1200}})
    script = [
        "The boat is called Marigold.",
        *(f"Line {n}: mild weather again." for n in range(2, 70)),
        f"Sage, note this. {remember('Ana prefers tea')}",
        f"Sage, and this. {remember('Bo is away in May')}",
    ]
    run_console(config, "\n".join(script) + "\n", timeout=300)
    transcript = run_console(config, "/memory sage\n/memory sage forget 1\n/memory sage forget 7\n/memory sage\n")
    shown, _, after = transcript.partition("[you] /memory sage forget 1")
    assert "Sage's memory here:" in shown and "Summary: you said: The boat is called Marigold." in shown
    assert "1. Ana prefers tea" in shown and "2. Bo is away in May" in shown
    assert "you removed Sage's note 1 ('Ana prefers tea')." in after
    assert "Sage has no note 7." in after
    assert "1. Bo is away in May" in after.rsplit("[you] /memory sage", 1)[1]

    transcript = run_console(config, "/memory sage clear\n/memory sage\n/memory nobody\n")
    assert "you cleared Sage's memory here: 1 note and its summary." in transcript
    assert "Summary: (none yet)" in transcript and "Notes: (none)" in transcript
    assert "'nobody' keeps nothing in this channel; personas here: Nova, Sage, Rex." in transcript
    assert "Marigold" not in memory_part(prompt_of(config, "sage"))


async def test_slack_memory_is_shown_to_anyone_and_corrected_by_managers_only(slack: SlackHarness) -> None:
    await slack.say(f"Sage, note this. {remember('Ana prefers tea')}", "1700000400.000100")
    await slack.command("/memory", "sage", user_id=MEMBER)
    await slack.command("/memory", "sage forget 1", user_id=MEMBER)
    await slack.command("/memory", "sage clear", user_id=MEMBER)
    shown, refused_forget, refused_clear = slack.replies_to_command()
    assert shown["response_type"] == "ephemeral" and "1. Ana prefers tea" in shown["text"]
    assert (refused_forget["response_type"], refused_forget["text"]) == (
        "ephemeral",
        REFUSAL.format(command="/memory forget"),
    )
    assert refused_clear["text"] == REFUSAL.format(command="/memory clear")
    assert not any("removed" in post["text"] for post in slack.posts())

    await slack.command("/memory", "sage forget 1")  # Ana is a workspace admin
    assert any(post["text"] == "Ana removed Sage's note 1 ('Ana prefers tea')." for post in slack.posts())
    events = await approvals.audit_events(slack.bot.roundtable.db, ["sage"])
    assert [(e.action, e.actor) for e in events if e.action == "memory"] == [("memory", "Ana")]
    assert [e.event for e in events if e.action == "remember"] == ["approved", "executed"]  # claimed, then run


async def test_discord_memory_is_shown_to_anyone_and_corrected_by_managers_only(
    fake: FakeDiscord, open_bot: Any
) -> None:
    async with open_bot() as bot:
        await fake.send_message(f"Sage, note this. {remember('Ana prefers tea')}")
        async with asyncio.timeout(30):  # the message comes through the gateway: until the note is stored
            while not await bot.app.db.fetch_one("SELECT 1 FROM persona_notes"):
                await asyncio.sleep(0.05)
        await settle(bot)
        asked = await fake.send_slash_command("memory", {"text": "sage"}, permissions=dp.MEMBER_PERMISSIONS)
        [shown] = await fake.wait_for_calls("POST", rf"/webhooks/{dp.APPLICATION_ID}/interaction-token-{asked}")
        asked = await fake.send_slash_command("memory", {"text": "sage forget 1"}, permissions=dp.MEMBER_PERMISSIONS)
        [refused] = await fake.wait_for_calls("POST", rf"/interactions/{asked}/[^/]+/callback")
        asked = await fake.send_slash_command("memory", {"text": "sage clear"})  # Manage Channels
        [cleared] = await fake.wait_for_calls("POST", rf"/webhooks/{dp.APPLICATION_ID}/interaction-token-{asked}")
        left = await bot.app.db.fetch_all("SELECT text FROM persona_notes")

    assert shown.json["flags"] == 64 and "1. Ana prefers tea" in shown.json["content"]
    assert refused.json["data"]["flags"] == 64
    assert refused.json["data"]["content"] == REFUSAL.format(command="/memory forget")
    assert "cleared Sage's memory here: 1 note." in cleared.json["content"]
    assert left == []


# -- listen-only personas -------------------------------------------------------------------------


def test_a_persona_that_listens_only_answers_only_when_named_and_its_summary_still_grows(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"history": {"token_budget": 1200}})
    first = run_console(
        config,
        "/persona quiet rex\nThe boat is called Marigold.\n" + "".join(f"Line {n}: mild.\n" for n in range(2, 60)),
    )
    assert "[system] Rex listens only here, and speaks when named." in first
    assert not any(line.startswith("[Rex]") for line in first.splitlines())
    early = summary_in(prompt_of(config, "rex"))
    assert "Marigold" in early

    second = run_console(config, "".join(f"Later line {n}: still mild.\n" for n in range(40)) + "Rex, your view?\n")
    spoke = [line for line in second.splitlines() if line.startswith("[Rex]")]
    assert len(spoke) == 1 and "Rex, your view?" in spoke[0]  # only when named
    later = summary_in(prompt_of(config, "rex"))
    assert "Marigold" in later and "Later line" in later  # it kept reading while it kept quiet


# -- the scene and the session --------------------------------------------------------------------


def test_the_scene_tells_the_date_and_time_in_the_channels_time_zone(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"bot": {"timezone": "Asia/Tokyo"}})
    run_console(config, "/scene A harbour office.\nHello Sage\n")
    scene = system_part(prompt_of(config, "sage")).split("The scene:\n", 1)[1]
    assert scene.startswith("A harbour office.\nIt is ") and scene.split("\n")[1].endswith("(JST).")


def test_a_quiet_gap_ends_the_session_and_its_summary_folds_the_whole_session_in(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    run_console(config, "The boat is called Marigold.\nSage, and the pier?\n")
    assert summary_in(prompt_of(config, "sage")) == ""  # all of it is still in the window
    with sqlite3.connect(tmp_path / "data" / "roundtable.sqlite3") as db:
        db.execute("UPDATE lines SET created_at = created_at - 7 * 3600")
    run_console(config, "Back again, Sage.\n")
    sage = prompt_of(config, "sage")
    assert "you said: The boat is called Marigold." in summary_in(sage)
    ended = sage.index("--- human ---\n[system] Session ended (")
    assert sage.index("you: The boat is called Marigold.") < ended < sage.index("--- human ---\n[system] New session (")


def test_the_fold_prompts_own_example_is_never_kept_as_a_fact() -> None:
    # Seen on the embedded Qwen in the recall bench: the prompt's example came back as a fact.
    reply = AIMessage(content=f'{{"facts": ["{FACT_EXAMPLE}", "Ana told me the boat is called Marigold"]}}')
    assert summary_of(reply) == "Ana told me the boat is called Marigold."

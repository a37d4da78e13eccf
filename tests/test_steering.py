"""Steering the moderator from the channel: pause and resume, /stop, /next, shown reasons, a custom
prompt, the last round's decisions, and recruitment. Through the app and its real round graph;
the console, Slack and Discord carry the same commands (tests/test_console.py, test_slack.py,
test_discord.py show their parsing there)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from langchain_core.messages import BaseMessage

from bot.command_values import (
    AllowRecruiting,
    Moderate,
    NameNextSpeaker,
    SetModeratorPrompt,
    ShowReasons,
    StopRound,
)
from bot.commands import parse_command
from bot.inbound import Inbound
from storage import channels
from tests.conftest import REPO, run_console, write_config
from tests.fake_models import FakeModels, varied_reply

KEY = "console:steer"


async def say(app, text: str) -> None:
    await app.service.handle(Inbound(KEY, "u1", "Ana", text))


async def command(app, text: str) -> str:
    parsed = parse_command(text)
    assert parsed is not None
    return (await app.service.run_command(KEY, parsed)).reply


async def test_next_names_the_first_speaker_of_the_next_round(app, port) -> None:
    assert await command(app, "/next rex") == "Rex speaks first in the next round."
    await say(app, "What do we think, everyone?")
    await app.service.wait_idle()
    assert port.speakers()[0] == "rex"
    await say(app, "And now?")  # the nomination was used up
    await app.service.wait_idle()
    assert port.speakers()[1] != "rex"


async def test_next_with_moderation_on_skips_the_moderator_for_that_pick(app, port) -> None:
    await app.service.run_command(KEY, Moderate("on"))
    await app.service.run_command(KEY, NameNextSpeaker("Sage"))
    await say(app, "Let's plan the launch.")
    await app.service.wait_idle()
    assert port.speakers()[0] == "sage"
    first = next(text for kind, _, text in port.events if kind == "trace")
    assert first == "[moderator] next: Sage (Sage was named with /next)"


async def test_next_for_someone_not_here_is_refused_and_changes_nothing(app) -> None:
    reply = await app.service.run_command(KEY, NameNextSpeaker("Pixel"))
    assert not reply.ok and reply.reply == "'Pixel' is not in this channel; choose one of Nova, Sage, Rex."
    channel = await channels.get_channel(app.db, KEY)
    assert channel is not None and channel.next_speaker is None


async def test_stop_ends_the_running_round_after_the_current_turn(open_test_app, port) -> None:
    started = asyncio.Event()

    async def slow(speaker: str, messages: list[BaseMessage]) -> str:
        started.set()
        await asyncio.sleep(0.3)
        return f"{speaker} has a long, careful thought about this."

    async with open_test_app(models=FakeModels(slow)) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await say(app, "Let's plan the launch.")
        await started.wait()
        reply = await app.service.run_command(KEY, StopRound())
        assert reply.reply == "The round stops after the current turn; pending approvals stay pending."
        await app.service.wait_idle()
        assert len(port.speakers()) == 1
        assert "[system] Round stopped (/stop)." in port.notices()
        assert (await app.service.run_command(KEY, StopRound())).reply == "No round is running here."


async def test_reasons_are_shown_in_the_channel_when_asked_for(app, port) -> None:
    await app.service.run_command(KEY, Moderate("on"))
    await app.service.run_command(KEY, ShowReasons(True))
    await say(app, "Let's plan the launch.")
    await app.service.wait_idle()
    reasons = [text for kind, _, text in port.events if kind == "reason"]
    assert reasons[0] == "[moderator] next: Nova (Nova has not spoken since the last human message)"
    assert reasons[-1].startswith("[moderator] next: FINISH")
    status = await command(app, "/moderate status")
    assert "The last round's decisions:\n- Nova (Nova has not spoken since the last human message)" in status


async def test_a_channel_prompt_replaces_the_instructions_but_not_the_rules(open_test_app) -> None:
    models = FakeModels(
        varied_reply("A perfectly reasonable reply."), [{"next_speaker": "Rex", "reason": "a pirate's view"}]
    )
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await app.service.run_command(KEY, SetModeratorPrompt("Talk like a pirate and prefer Rex."))
        await say(app, "Let's plan the launch.")
        await app.service.wait_idle()
    system = next(messages for speaker, messages in models.calls if speaker == "moderator")[0].text
    assert system.startswith("Talk like a pirate and prefer Rex.")
    assert 'Reply with JSON only: {"next_speaker"' in system and "You moderate a group chat" not in system


async def test_a_too_long_prompt_is_refused_in_one_line(app) -> None:
    reply = await app.service.handle(Inbound(KEY, "u1", "Ana", "/moderate prompt " + "x" * 2001))
    assert reply is not None and not reply.ok
    assert reply.reply == "the moderator prompt is 2001 characters; the most is 2000"


async def test_the_moderator_recruits_a_persona_with_the_expertise_needed(open_test_app, port, tmp_path: Path) -> None:
    models = FakeModels(
        varied_reply("A perfectly reasonable reply."), [{"next_speaker": "Pixel", "reason": "a design question"}]
    )
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await app.service.run_command(KEY, AllowRecruiting(True))
        await say(app, "We have a logo question.")
        await app.service.wait_idle()
        assert "pixel" in await channels.participants(app.db, KEY)
        prompt = await app.engine.prompt_for(KEY, "pixel")
    assert "[system] Pixel joined (invited by the moderator: a design question)." in port.notices()
    assert port.speakers()[0] == "pixel"
    moderator_prompt = next(messages for speaker, messages in models.calls if speaker == "moderator")
    assert '"invitations": {"Pixel": ["design"' in moderator_prompt[-1].text
    # Like /invite: the newcomer sees nothing from before it joined.
    assert all("logo question" not in m.text for m in prompt)


async def test_a_recruited_persona_joins_for_its_expertise_when_the_reason_is_a_fixed_one(open_test_app, port) -> None:
    # The embedded model picks from fixed reasons, which say why a persona speaks, not why it was invited.
    models = FakeModels(
        varied_reply("A perfectly reasonable reply."), [{"next_speaker": "Pixel", "reason": "knows this topic best"}]
    )
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await app.service.run_command(KEY, AllowRecruiting(True))
        await say(app, "We have a logo question.")
        await app.service.wait_idle()
    joined = "Pixel joined (invited by the moderator: its expertise in design, logos, colour, visual identity)"
    assert f"[system] {joined}." in port.notices()


async def test_recruitment_off_offers_nobody_from_outside(open_test_app, port) -> None:
    models = FakeModels(varied_reply("A perfectly reasonable reply."), [{"next_speaker": "Pixel", "reason": "design"}])
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await app.service.run_command(KEY, AllowRecruiting(False))
        await say(app, "We have a logo question.")
        await app.service.wait_idle()
        assert "pixel" not in await channels.participants(app.db, KEY)
    assert "pixel" not in port.speakers()


def test_a_paused_channel_stays_paused_across_a_restart(tmp_path: Path) -> None:
    config = write_config(tmp_path)

    def console(script: str) -> str:
        return run_console(config, script)

    before = console("/moderate pause\nSage, are you there?\n")
    assert "[Sage]" not in before
    after = console("Rex, and you?\n")
    assert "[Sage]" not in after and "[Rex]" not in after  # still paused after the restart
    resumed = console("/moderate resume\n")
    replies = [line for line in resumed.splitlines() if line.startswith(("[Sage]", "[Rex]"))]
    assert [line.split("]")[0] for line in replies] == ["[Sage", "[Rex"]  # one round for both messages


async def test_a_prompt_file_sets_the_moderator_instructions_everywhere(open_test_app, tmp_path: Path) -> None:
    prompt = tmp_path / "moderator.txt"
    prompt.write_text("Keep it short; Sage first when in doubt.\n")
    models = FakeModels(varied_reply("A perfectly reasonable reply."), [{"next_speaker": "Sage", "reason": "in doubt"}])
    async with open_test_app({"moderation": {"prompt_file": str(prompt)}}, models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await say(app, "Let's plan the launch.")
        await app.service.wait_idle()
    system = next(messages for speaker, messages in models.calls if speaker == "moderator")[0].text
    assert system.startswith("Keep it short; Sage first when in doubt.") and "Reply with JSON only" in system


def test_a_missing_prompt_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"moderation": {"prompt_file": "nowhere.txt"}})
    result = subprocess.run(
        [sys.executable, "-m", "bot", "console", "--config", str(config), "--script", str(config)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "[moderation] prompt_file" in result.stderr and "missing or empty" in result.stderr


def test_the_steering_commands_through_the_console(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"moderation": {"recruit": True}})
    stdout = run_console(
        config,
        "/moderate on\n/moderate reasons on\n/next sage\nLet's plan the launch.\n/moderate status\n"
        "/next zorg\n/stop\n/moderate prompt Be brief.\n/moderate prompt reset\n/moderate recruit off\n"
        "/moderate pause\nRex?\n/moderate resume\n",
    )
    lines = stdout.splitlines()
    after = lines[lines.index("[you] Let's plan the launch.") + 1 :]
    assert after[0] == "[moderator] next: Sage (Sage was named with /next)"  # shown without --verbose
    assert after[1].startswith("[Sage] ")
    assert "[system] - Sage (Sage was named with /next)" in lines  # /moderate status: the last decisions
    for reply in (
        "[system] 'zorg' is not in this channel; choose one of Nova, Sage, Rex.",
        "[system] No round is running here.",
        "[system] The moderator uses this channel's own prompt now.",
        "[system] The moderator uses the default prompt again.",
        "[system] The moderator may not invite personas into this channel.",
    ):
        assert reply in lines
    resumed = lines[lines.index("[you] /moderate resume") + 1 :]
    assert any(line.startswith("[Rex] ") for line in resumed)

"""One command registry (bot/commands.py): the Slack manifest, Discord's app-command tree and /help on
every surface agree with it, and who may use a command is the same on Slack, Discord and the console.
Discord and Slack run for real against their fakes."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import yaml

from bot.command_help import help_text, manifest_slash_commands, slash_description
from bot.command_values import Command
from bot.commands import COMMANDS, DEFAULT_NEEDS, HANDLERS, PERMISSIONS, parse
from bot.config import load_config
from bot.permissions import unknown_permission
from storage import channels
from tests.conftest import REPO, write_config
from tests.fakes import discord_payloads as p
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_api import BOT_USER_ID, TEAM_ID
from tests.fakes.slack_payloads import CHANNEL, message
from tests.slack_harness import SlackHarness, StartSlack

MANIFEST_URL = "https://example.com/slack/events"
MEMBER = "UMEMBER"  # a Slack user who is neither a workspace admin nor an owner
SLACK_KEY = f"slack:{TEAM_ID}:{CHANNEL}"
REFUSAL = (
    "Only channel managers can use {command}: it needs Manage Channels on Discord, "
    "or a workspace admin or owner on Slack."
)


def test_the_slack_manifest_declares_the_registry_slash_commands() -> None:
    manifest = yaml.safe_load((REPO / "manifest.yml").read_text(encoding="utf-8"))
    expected = manifest_slash_commands(MANIFEST_URL)
    assert manifest["features"]["slash_commands"] == expected, (
        "manifest.yml's slash_commands differ from bot/commands.py; they should read:\n"
        + json.dumps(expected, indent=2)
    )


def test_every_parsed_value_has_one_handler_and_a_known_permission() -> None:
    samples: list[Command] = []
    for spec in COMMANDS:
        for words in ("", "on", "off", "status", "pause", "resume", "reasons on", "prompt Be brief.", "recruit on"):
            try:
                samples.append(parse(spec, words))
            except ValueError:
                pass
    assert {type(s) for s in samples} <= set(HANDLERS)
    assert all(s.permission in PERMISSIONS for s in samples)
    assert len(PERMISSIONS) == len(set(PERMISSIONS))


def test_discord_and_slack_show_short_enough_descriptions() -> None:
    for spec in COMMANDS:
        assert len(slash_description(spec)) <= 100, spec.name  # Discord's limit
        assert all(len(option.description) <= 100 for option in spec.options), spec.name
        assert spec.options == () or "discord" in spec.places, f"/{spec.name} has options but no Discord command"


def test_help_lists_what_each_surface_takes() -> None:
    def names(surface: Any) -> set[str]:
        return {line.removeprefix("@Roundtable ").split()[0][1:] for line in help_text(surface).splitlines()[1:]}

    typed = {s.name for s in COMMANDS if "typed" in s.places}
    assert names("console") == typed
    assert names("slack") == typed | {s.name for s in COMMANDS if "slack" in s.places}
    assert names("discord") == {s.name for s in COMMANDS if "discord" in s.places}


def test_config_toml_lists_the_default_permissions() -> None:
    documented = tomllib.loads((REPO / "config.toml").read_text(encoding="utf-8"))["permissions"]
    assert {name: frozenset(needs) for name, needs in documented.items()} == DEFAULT_NEEDS
    assert all(name in PERMISSIONS for name in documented)


def test_an_unknown_permission_is_one_line_naming_the_key(tmp_path: Path) -> None:
    # Checked where the permissions are built (configuration sits below the registry): the app
    # refuses to open with it; tests/test_validation.py runs the CLI for its one line.
    problem = unknown_permission(
        load_config(write_config(tmp_path, {"permissions": {"moderate_dance": ["manager"]}})).settings.permissions
    )
    assert problem is not None and problem.startswith("[permissions] moderate_dance: unknown command")
    assert "\n" not in problem
    opened = load_config(write_config(tmp_path, {"permissions": {"scene": [], "moderate_on": ["manager"]}}))
    assert opened.settings.permissions == {"scene": [], "moderate_on": ["manager"]}


# -- Discord's tree ---------------------------------------------------------------------------------


async def test_the_discord_tree_is_the_registry(fake: FakeDiscord, open_bot: Any) -> None:
    async with open_bot():
        registered = {c["name"]: c for c in fake.commands}

    declared = {spec.name: spec for spec in COMMANDS if "discord" in spec.places}
    assert set(registered) == set(declared)
    for name, spec in declared.items():
        command = registered[name]
        assert command["description"] == slash_description(spec)
        options = {o["name"]: o for o in command["options"]}
        assert set(options) == {o.name for o in spec.options}
        for option in spec.options:
            sent = options[option.name]
            assert sent["description"] == option.description and sent["required"] == option.required
            assert [c["value"] for c in sent.get("choices", [])] == list(option.choices)


# -- who may change a channel -----------------------------------------------------------------------


async def refused_on_discord(fake: FakeDiscord, name: str, options: dict[str, Any]) -> str:
    asked = await fake.send_slash_command(name, options, permissions=p.MEMBER_PERMISSIONS)
    [callback] = await fake.wait_for_calls("POST", rf"/interactions/{asked}/[^/]+/callback")
    assert callback.json["type"] == 4 and callback.json["data"]["flags"] == 64  # at once, and only to them
    return str(callback.json["data"]["content"])


async def test_discord_refuses_a_member_channel_changes_in_the_shared_words(fake: FakeDiscord, open_bot: Any) -> None:
    key = f"discord:{p.TEXT_CHANNEL_ID}"
    async with open_bot() as bot:
        prompt = await refused_on_discord(fake, "moderate", {"mode": "prompt", "text": "Be brief."})
        invite = await refused_on_discord(fake, "persona", {"action": "invite", "persona_id": "pixel"})
        scene = await refused_on_discord(fake, "scene", {"text": "A launch retro."})
        on = await fake.send_slash_command("moderate", {"mode": "on"}, permissions=p.MEMBER_PERMISSIONS)
        [followup] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{on}")
        set_scene = await fake.send_slash_command("scene", {"text": "A launch retro."})  # Manage Channels
        [scene_set] = await fake.wait_for_calls("POST", rf"/webhooks/{p.APPLICATION_ID}/interaction-token-{set_scene}")
        channel = await channels.get_channel(bot.app.db, key)
        participants = await channels.participants(bot.app.db, key)

    assert prompt == REFUSAL.format(command="/moderate prompt")
    assert invite == REFUSAL.format(command="/persona invite")
    assert scene == REFUSAL.format(command="/scene")
    assert "Moderation is on" in followup.json["content"]
    assert scene_set.json["content"] == "Scene set: A launch retro."
    assert channel is not None and channel.moderated and channel.scene == "A launch retro."
    assert channel.moderator_prompt == "" and "pixel" not in participants


async def test_slack_refuses_a_member_channel_changes_in_the_same_words(slack: SlackHarness) -> None:
    db = slack.bot.roundtable.db
    await slack.command("/moderate", "prompt Be brief.", user_id=MEMBER)
    await slack.command("/persona", "invite pixel", user_id=MEMBER)
    typed = message(f"<@{BOT_USER_ID}> /scene A launch retro.", "1700000300.000001", user=MEMBER)
    assert await slack.send_event({**typed, "type": "app_mention"}, "EvScene") == 200
    await slack.command("/moderate", "on", user_id=MEMBER)  # anyone may switch the moderator
    await slack.bot.wait_idle()

    prompt, invite = slack.replies_to_command()  # /moderate on was announced in the channel instead
    assert (prompt["response_type"], prompt["text"]) == ("ephemeral", REFUSAL.format(command="/moderate prompt"))
    assert (invite["response_type"], invite["text"]) == ("ephemeral", REFUSAL.format(command="/persona invite"))
    [scene] = slack.ephemerals()
    assert (scene["user"], scene["text"]) == (MEMBER, REFUSAL.format(command="/scene"))
    [announcement] = slack.posts()
    assert announcement["text"].startswith("Moderation is on")
    channel = await channels.get_channel(db, SLACK_KEY)
    assert channel is not None and channel.moderated and channel.moderator_prompt == "" and channel.scene == ""
    assert "pixel" not in await channels.participants(db, SLACK_KEY)
    asked = [call.args["user"] for call in slack.fake.calls_to("users.info")]
    assert asked.count(MEMBER) == 1  # users.info once per user, then remembered


async def test_a_slack_workspace_admin_or_listed_manager_is_not_refused(start_slack: StartSlack) -> None:
    async with start_slack({"slack": {"managers": [MEMBER]}}) as slack:
        slack.fake.owners.add("UOWNER")
        await slack.command("/moderate", "prompt Be brief.", user_id="UOWNER")  # an owner, from users.info
        await slack.command("/persona", "invite pixel", user_id=MEMBER)  # listed in [slack] managers
        await slack.bot.wait_idle()
        replies = slack.replies_to_command()
        db = slack.bot.roundtable.db
        channel = await channels.get_channel(db, SLACK_KEY)
        participants = await channels.participants(db, SLACK_KEY)

    assert replies[0]["text"] == "The moderator uses this channel's own prompt now."
    assert channel is not None and channel.moderator_prompt == "Be brief." and "pixel" in participants
    assert [post["text"] for post in slack.posts()] == ["Pixel joined."]

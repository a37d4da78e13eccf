"""The approval triggers that hold whatever the channel's mode: an action's estimated cost over
[approvals] max_cost, a stated confidence under min_confidence, and failures_before_pause model
failures in a row, which pause the channel until an approver resumes it. The policy's pure
function first, then the console with the scripted model, then the stored records."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bot.approval_desk import Actor
from bot.command_values import PauseReplies
from bot.config import ConfigError, load_config
from bot.inbound import Inbound
from graph.actions import ActionCall, check_call, cost_of
from graph.models.local_actions import CONFIDENCE_STEPS
from graph.policy import PolicySettings, Trust, Verdict, verdict
from personas import load_personas
from storage import approvals, channels
from storage.records import ApprovalMode
from tests.conftest import EMBEDDED_GEMMA, run_console, write_config
from tests.fakes.discord_server import FakeDiscord
from tests.test_discord import APPROVERS, PUBLISH, approval_request

MODES = list(ApprovalMode)
NEWS = {"channel": "news", "text": "We launched!"}
ZOE = {"to": "Zoe", "text": "The server is back"}


def decide(action: str, mode: ApprovalMode, settings: PolicySettings, **stated: float | None) -> tuple[Verdict, str]:
    decision = verdict(action, mode=mode, actions_in_turn=1, trust=Trust.EXPERT, settings=settings, **stated)  # type: ignore[arg-type]
    return decision.verdict, decision.reason


# -- the policy ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_cost_over_max_cost_waits_in_every_mode(mode: ApprovalMode) -> None:
    settings = PolicySettings(sensitive=(), max_cost=2)
    assert decide("send_message", mode, settings, cost=3) == (Verdict.WAIT, "estimated cost 3 > max_cost 2")
    at_the_limit, _ = decide("send_message", mode, settings, cost=2)
    assert (
        at_the_limit is {"in-command": Verdict.WAIT, "in-the-loop": Verdict.RUN, "on-the-loop": Verdict.ANNOUNCE}[mode]
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_confidence_under_min_confidence_waits_in_every_mode(mode: ApprovalMode) -> None:
    settings = PolicySettings(sensitive=(), min_confidence=0.6)
    assert decide("send_message", mode, settings, confidence=0.4) == (
        Verdict.WAIT,
        "confidence 0.4 < min_confidence 0.6",
    )
    sure, _ = decide("send_message", mode, settings, confidence=0.6)
    assert sure is {"in-command": Verdict.WAIT, "in-the-loop": Verdict.RUN, "on-the-loop": Verdict.ANNOUNCE}[mode]


@pytest.mark.parametrize("mode", MODES)
def test_a_call_that_states_no_confidence_waits_only_when_a_minimum_is_set(mode: ApprovalMode) -> None:
    unset = decide("send_message", mode, PolicySettings(sensitive=()), confidence=None)
    assert unset[0] is not Verdict.WAIT or mode is ApprovalMode.IN_COMMAND
    assert decide("send_message", mode, PolicySettings(sensitive=(), min_confidence=0.5), confidence=None) == (
        Verdict.WAIT,
        "no confidence stated (min_confidence 0.5)",
    )


def test_every_reason_a_call_waits_is_given() -> None:
    settings = PolicySettings(max_cost=1, min_confidence=0.8)
    assert decide("publish_post", ApprovalMode.IN_THE_LOOP, settings, cost=2, confidence=0.3) == (
        Verdict.WAIT,
        "estimated cost 2 > max_cost 1; confidence 0.3 < min_confidence 0.8",
    )
    # The mode's own waits need no reason: that is what the mode is for.
    assert decide("publish_post", ApprovalMode.IN_THE_LOOP, PolicySettings(), cost=2, confidence=0.3) == (
        Verdict.WAIT,
        "",
    )
    assert decide("publish_post", ApprovalMode.IN_COMMAND, PolicySettings()) == (Verdict.WAIT, "")
    # Off by default: no cost is too high, no confidence too low.
    assert PolicySettings().max_cost == math.inf and PolicySettings().min_confidence == 0


def test_costs_are_the_actions_own_unless_the_deployment_sets_them() -> None:
    assert [cost_of(name, {}) for name in ("send_message", "publish_post", "schedule_post")] == [1, 2, 3]
    assert cost_of("publish_post", {"publish_post": 40}) == 40 and cost_of("send_message", {"publish_post": 40}) == 1


# -- the stated confidence is the policy's, never the action's --------------------------------------


def test_a_stated_confidence_is_taken_out_of_the_arguments() -> None:
    nova = load_personas()["nova"]
    call = check_call(nova, "c1", "publish_post", {**NEWS, "confidence": 0.4})
    assert isinstance(call, ActionCall) and call.args == NEWS and call.confidence == 0.4
    assert "confidence" not in call.describe()
    as_text = check_call(nova, "c2", "publish_post", {**NEWS, "confidence": "0.75"})  # some models quote numbers
    assert isinstance(as_text, ActionCall) and as_text.confidence == 0.75
    silent = check_call(nova, "c3", "publish_post", NEWS)
    assert isinstance(silent, ActionCall) and silent.confidence is None


@pytest.mark.parametrize("stated", [85, -0.1, "very", True, float("nan"), [0.5]])
def test_a_confidence_that_is_not_from_0_to_1_is_a_tool_error(stated: object) -> None:
    nova = load_personas()["nova"]
    error = check_call(nova, "c1", "publish_post", {**NEWS, "confidence": stated})
    assert isinstance(error, str)
    assert error.startswith("error: bad arguments for publish_post: confidence: a number from 0 to 1, got ")


# -- configuration -------------------------------------------------------------------------------


def test_the_triggers_are_validated_in_one_line(tmp_path: Path) -> None:
    def error(values: dict[str, object]) -> str:
        with pytest.raises(ConfigError) as raised:
            load_config(write_config(tmp_path, {"approvals": values}))
        return str(raised.value)

    assert "[approvals] min_confidence: expected less than or equal to 1" in error({"min_confidence": 1.5})
    assert "[approvals] max_cost: expected greater than or equal to 0" in error({"max_cost": -1})
    assert "[approvals] failures_before_pause: expected greater than or equal to 0" in error(
        {"failures_before_pause": -2}
    )
    unknown = error({"action_costs": {"launch_rocket": 5}})
    assert "[approvals] action_costs: expected action names (publish_post, send_message, schedule_post" in unknown
    assert "\n" not in unknown


# -- through the console (scripted model) ----------------------------------------------------------


def act(name: str, args: Mapping[str, object]) -> str:
    return f"Nova, please. !!act {name} {json.dumps(args)}\n"


def after(lines: list[str], said: str) -> list[str]:
    return lines[lines.index(f"[you] {said.strip()}") + 1 :]


def test_max_cost_sends_an_action_that_would_run_to_approval(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"approvals": {"sensitive": [], "max_cost": 1}})
    message, post = act("send_message", ZOE), act("publish_post", NEWS)
    # The message that ran at once is action 1 (claimed like an approval): the post waits as #2.
    lines = run_console(config, f"{message}{post}/approve 2\n").splitlines()

    assert "[action] Nova ran send_message" not in "\n".join(lines)  # not sensitive: it ran at once
    assert not any(
        line.startswith("[approval")
        for line in after(lines, message)[: after(lines, message).index(f"[you] {post.strip()}")]
    )
    assert "[action 1] ran: send_message(to='Zoe', text='The server is back')" in lines
    waiting = [line for line in after(lines, post) if line.startswith("[approval 2]")]
    assert len(waiting) == 1
    assert waiting[0].startswith("[approval 2] Nova wants publish_post(channel='news', text='We launched!')")
    assert waiting[0].endswith(" - waits: estimated cost 2 > max_cost 1")
    approved = after(lines, "/approve 2")
    assert approved[:3] == [
        "[system] Approved #2.",
        "[Nova in #news] We launched!",
        "[action 2] executed: posted in #news",
    ]


def test_max_cost_holds_in_an_on_the_loop_channel(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"approvals": {"max_cost": 2}})
    schedule = act("schedule_post", {"at": "2030-01-01T09:00:00+00:00", **NEWS})
    lines = run_console(config, f"/approvals mode on-the-loop\n{act('publish_post', NEWS)}{schedule}").splitlines()

    assert "[Nova in #news] We launched!" in lines  # cost 2: runs and is announced
    [waiting] = [line for line in after(lines, schedule) if line.startswith("[approval")]
    assert waiting.startswith("[approval 2] Nova wants schedule_post(")  # the post that ran is action 1
    assert waiting.endswith(" - waits: estimated cost 3 > max_cost 2")


def test_min_confidence_sends_an_unsure_action_to_approval(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"approvals": {"sensitive": [], "min_confidence": 0.6}})
    sure = act("publish_post", {**NEWS, "confidence": 0.9})
    unsure = act("publish_post", {"channel": "news", "text": "Maybe launched?", "confidence": 0.4})
    silent = act("publish_post", {"channel": "news", "text": "Who knows"})
    lines = run_console(config, f"{sure}{unsure}{silent}/reject 2 not sure either\n").splitlines()

    assert "[Nova in #news] We launched!" in lines  # stated 0.9: it ran
    # The sure post that ran is action 1; the unsure ones wait as #2 and #3.
    [first] = [line for line in after(lines, unsure) if line.startswith("[approval 2]")]
    # The confidence decides; it is not an argument of the post, so the request does not show it.
    assert first.startswith("[approval 2] Nova wants publish_post(channel='news', text='Maybe launched?') (expires")
    assert first.endswith(" - waits: confidence 0.4 < min_confidence 0.6")
    [second] = [line for line in after(lines, silent) if line.startswith("[approval 3]")]
    assert second.endswith(" - waits: no confidence stated (min_confidence 0.6)")
    assert "[Nova in #news] Maybe launched?" not in lines


async def test_a_confidence_that_let_an_action_run_is_in_the_audit_log(open_test_app, port) -> None:
    async with open_test_app({"approvals": {"sensitive": [], "min_confidence": 0.6}}) as app:
        sure = act("send_message", {**ZOE, "confidence": 0.8}).strip()
        await app.service.handle(Inbound("console:triggers", "u1", "Ana", sure))
        await app.service.wait_idle()
        # What let it run without a person: the policy, with the confidence its model stated.
        ran = [e.detail for e in await approvals.audit_events(app.db) if e.actor == "policy"]
    assert len(port.executed) == 1
    assert len(ran) == 1 and ran[0].startswith("ran at once: {") and ran[0].endswith(" (stated confidence 0.8)")


async def test_the_stated_confidence_and_the_reason_are_kept_with_the_approval(open_test_app, port) -> None:
    async with open_test_app({"approvals": {"min_confidence": 0.6}}) as app:
        unsure = act("publish_post", {**NEWS, "confidence": 0.4}).strip()
        await app.service.handle(Inbound("console:triggers", "u1", "Ana", unsure))
        await app.service.wait_idle()
        [waiting] = await approvals.pending(app.db)
    assert waiting.args == NEWS and waiting.confidence == 0.4
    assert waiting.reason == "confidence 0.4 < min_confidence 0.6"
    assert port.executed == []


def test_failures_in_a_row_pause_the_channel_until_an_approver_resumes(tmp_path: Path) -> None:
    # The console user is no approver here: the pause holds against them, and across a restart.
    guest = write_config(tmp_path, {"approvals": {"failures_before_pause": 3}, "bot": {"console_user": "guest"}})
    first = run_console(
        guest, "Nova, Sage and Rex: !!fail 2\nRex? !!fail 1\nNova, are you there?\n/moderate resume\n"
    ).splitlines()
    paused = [line for line in first if "paused" in line]
    assert paused[:2] == [
        "[system] Replies are paused after 3 model failures in a row. Messages are kept; an approver resumes "
        "with /moderate resume.",
        "[system] approvers: Replies in this channel are paused after 3 model failures in a row. Resume with "
        "/moderate resume.",
    ]
    asked = first[first.index("[guest] Nova, are you there?") + 1 :]
    assert asked == [
        "[guest] /moderate resume",
        "[system] Replies were paused after model failures in a row: only an approver can resume them.",
    ]  # no persona answered, and the guest could not resume

    you = write_config(tmp_path, {"approvals": {"failures_before_pause": 3}})
    second = run_console(you, "/moderate status\n/moderate resume\n").splitlines()
    assert any("paused after model failures in a row" in line for line in second)  # /moderate status
    resumed = after(second, "/moderate resume")
    assert resumed[0] == "[system] Replies resumed: what came in meanwhile is answered now, in one round."
    assert any(line.startswith("[Nova] ") for line in resumed)  # the message kept while paused is answered


async def test_the_pause_is_stored_with_the_channel_and_a_resume_by_an_approver_lifts_it(open_test_app, port) -> None:
    async with open_test_app({"approvals": {"failures_before_pause": 1}}) as app:
        key = "console:triggers"
        await app.service.handle(Inbound(key, "u1", "Ana", "Rex? !!fail 1"))
        await app.service.wait_idle()
        channel = await channels.get_channel(app.db, key)
        assert channel is not None and channel.paused and channel.paused_after_failures
        assert [text for kind, _, text in port.events if kind == "approvers"] == [
            "Replies in this channel are paused after 1 model failure in a row. Resume with /moderate resume."
        ]
        stranger = await app.service.run_command(key, PauseReplies(False), actor=Actor("u1", "Ana"))
        assert not stranger.ok and "only an approver can resume" in stranger.reply
        approver = await app.service.run_command(key, PauseReplies(False), actor=Actor("you", "you"))
        assert approver.ok
        channel = await channels.get_channel(app.db, key)
        assert channel is not None and not channel.paused and not channel.paused_after_failures


async def test_the_failures_in_a_row_are_counted_on_across_a_restart(open_test_app, port) -> None:
    key = "console:triggers"
    async with open_test_app({"approvals": {"failures_before_pause": 3}}) as app:
        await app.service.handle(Inbound(key, "u1", "Ana", "Rex? !!fail 1"))
        await app.service.handle(Inbound(key, "u1", "Ana", "Rex? !!fail 1"))
        await app.service.wait_idle()
        channel = await channels.get_channel(app.db, key)
        assert channel is not None and channel.failures_in_a_row == 2 and not channel.paused
    async with open_test_app({"approvals": {"failures_before_pause": 3}}) as app:  # a restart
        await app.service.handle(Inbound(key, "u1", "Ana", "Rex? !!fail 1"))
        await app.service.wait_idle()
        channel = await channels.get_channel(app.db, key)
        assert channel is not None and channel.paused_after_failures
    assert [text for kind, _, text in port.events if kind == "approvers"][-1] == (
        "Replies in this channel are paused after 3 model failures in a row. Resume with /moderate resume."
    )


async def test_a_turn_that_speaks_ends_the_run_of_failures(open_test_app, port) -> None:
    key = "console:triggers"
    async with open_test_app({"approvals": {"failures_before_pause": 2}}) as app:
        await app.service.handle(Inbound(key, "u1", "Ana", "Rex? !!fail 1"))
        await app.service.handle(Inbound(key, "u1", "Ana", "Rex, how are you?"))
        await app.service.handle(Inbound(key, "u1", "Ana", "Rex? !!fail 1"))
        await app.service.wait_idle()
        channel = await channels.get_channel(app.db, key)
        assert channel is not None and channel.failures_in_a_row == 1 and not channel.paused


# -- the embedded Gemma states its confidence under the decision schema --------------------------------


def test_a_call_the_embedded_gemma_is_unsure_of_waits_saying_its_confidence(tmp_path: Path) -> None:
    """Whatever Gemma proposes, the confidence it states (one of the schema's tenths) decides: under
    min_confidence the call waits, saying so, and /approve runs it once; at or above it nothing waits.
    Whether Gemma proposes publish_post for this line is bench/actions.py's figure."""
    config = write_config(
        tmp_path,
        {
            "llm": {"provider": "local"},
            "llm.local": EMBEDDED_GEMMA,
            "approvals": {"sensitive": [], "min_confidence": 0.95},  # only an unsure call waits
        },
    )
    asked = "Nova, publish 'Doors open at 9' in #news"
    lines = run_console(config, f"{asked}\n/approve 1\n").splitlines()
    answer = after(lines, asked)[0]
    approved = after(lines, "/approve 1")
    if answer.startswith("[approval 1] Nova wants "):
        stated = re.search(r" - waits: confidence (\d(?:\.\d)?) < min_confidence 0\.95$", answer)
        assert stated is not None and float(stated[1]) in CONFIDENCE_STEPS and float(stated[1]) < 0.95
        assert approved[0] == "[system] Approved #1."
        ran = [line for line in approved if line.startswith("[action 1] ")]
        assert len(ran) == 1 and ran[0].startswith(("[action 1] executed: ", "[action 1] failed: "))
    else:
        assert not any(line.startswith("[approval") for line in lines)  # a sure call, or none: nothing waits
        assert approved[0] == "[system] There is no approval #1."
        assert answer.startswith(("[Nova", "[action 1] ", "[system] Nova has no answer to that right now."))


# -- the reason on Slack's and Discord's requests ---------------------------------------------------


async def test_a_discord_request_says_why_it_waits(fake: FakeDiscord, open_bot: Any) -> None:
    sections = {"approvals": {**APPROVERS["approvals"], "sensitive": [], "max_cost": 1}}
    async with open_bot(sections=sections):
        await fake.send_message(PUBLISH)  # publish_post costs 2: it waits, though nothing is sensitive here
        message_id, approval_id = await approval_request(fake)
        request = fake.messages[message_id]["content"].splitlines()
    assert request[0] == f"**Approval #{approval_id}**: Nova wants to run `publish_post`"
    assert request[1] == "risk medium"  # nothing is sensitive here: publish_post's declared risk
    assert request[2] == "Waits: estimated cost 2 > max\\_cost 1"  # markdown made inert
    assert request[3:5] == ["> channel: news", "> text: We launched!"]

"""Rounds through the real graph: moderator, review, failures, ordering and concurrency."""

import asyncio

from langchain_core.messages import BaseMessage

from bot.command_values import Dismiss, Invite, Moderate
from bot.inbound import Inbound
from tests.fake_models import FakeModels, fixed_reply, fresh_reply, varied_reply

KEY = "console:r"


def say(text: str, key: str = KEY, event_id: str | None = None) -> Inbound:
    return Inbound(key, "u1", "Ana", text, event_id=event_id)


async def run(app, *lines: str, key: str = KEY) -> None:
    for line in lines:
        await app.service.handle(say(line, key))
    await app.service.wait_idle()


async def test_addressed_personas_reply_in_mention_order_then_the_round_ends(app, port):
    await run(app, "Rex, then Nova: what do you think?")
    assert port.speakers() == ["rex", "nova"]
    assert "[moderator]" not in " ".join(text for _, _, text in port.events)


async def test_moderated_round_ends_at_finish(app, port):
    await app.service.run_command(KEY, Moderate("on"))
    await run(app, "Let's plan the launch.")
    assert port.speakers() == ["nova", "sage", "rex"]
    traces = [text for kind, _, text in port.events if kind == "trace"]
    assert traces[-1].startswith("[moderator] next: FINISH")


async def test_moderated_round_ends_at_max_turns(open_test_app, port):
    decisions = [{"next_speaker": name, "reason": "keep going"} for name in ["Nova", "Sage"] * 10]
    models = FakeModels(varied_reply("A perfectly reasonable reply."), decisions)
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on", max_turns=4))
        await run(app, "Debate!")
    # Nova and Sage chosen, Rex the only one left (no call), then Nova again: the fourth turn is the last.
    assert port.speakers() == ["nova", "sage", "rex", "nova"]
    assert models.count("moderator") == 3


async def test_invalid_moderator_pick_is_asked_again_then_falls_back_to_natural_order(open_test_app, port):
    decisions = [
        {"next_speaker": "Bob", "reason": "?"},  # not a participant
        "not json at all",  # the one re-ask fails too -> natural order
        {"next_speaker": "Bob", "reason": "?"},
        {"next_speaker": "Sage", "reason": "second try works"},
        {"next_speaker": "FINISH", "reason": "done"},
    ]
    models = FakeModels(varied_reply("A perfectly reasonable reply."), decisions)
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await run(app, "Go.")
    moderator_prompts = [messages for speaker, messages in models.calls if speaker == "moderator"]
    assert "That decision was invalid: 'Bob' is not a participant" in moderator_prompts[1][-1].content
    traces = [text for kind, _, text in port.events if kind == "trace"]
    assert "fallback to natural order" in traces[0]
    assert traces[1] == "[moderator] next: Sage (second try works)"
    assert port.speakers()[1] == "sage"
    assert sorted(port.speakers()) == ["nova", "rex", "sage"]  # the third is the one left: no call
    assert traces[-1] == "[moderator] next: FINISH (done)"


async def test_no_moderator_call_with_a_single_participant(open_test_app, port):
    models = FakeModels(fixed_reply("Just me talking here, alone."))
    async with open_test_app({"bot": {"participants": ["sage"]}}, models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))
        await run(app, "Anyone?")
    assert port.speakers() == ["sage"]
    assert models.count("moderator") == 0


async def test_moderate_off_during_a_round_stops_it_after_the_current_turn(app, port):
    await app.service.run_command(KEY, Moderate("on"))
    original_post = port.post

    async def post_then_switch_off(channel_key, persona, text, thread):
        await original_post(channel_key, persona, text, thread)
        if len(port.posts) == 1:  # a user types /moderate off while the first persona is answering
            await app.service.run_command(KEY, Moderate("off"))

    port.post = post_then_switch_off
    await run(app, "Everyone, go!")
    assert port.speakers() == ["nova"]


async def test_review_retries_at_most_twice_then_lets_the_reply_through(open_test_app, port):
    models = FakeModels(fixed_reply("ok"))
    async with open_test_app(models=models) as app:
        await run(app, "Sage?")
    assert models.count("sage") == 3
    # The note is an instruction in the turn's question, the prompt's last message: no "[system]" line.
    retried = models.calls[2][1][-1]
    assert retried.id == "turn-retry" and "Your last draft was not posted" in retried.content
    assert "too short" in retried.content and "[system]" not in retried.content
    assert port.posts[-1][1:3] == ("sage", "ok")
    async with open_test_app(models=models) as app:  # nothing of the review is in any persona's history
        for persona in ("sage", "nova", "rex"):
            assert not [m for m in await app.engine.prompt_for(KEY, persona) if "not posted" in str(m.content)]


async def test_review_accepts_a_good_second_draft(open_test_app, port):
    drafts = iter(["I'm sorry, but I can't help with that.", "Fine: ship it on Tuesday with a short note."])

    async def reply(speaker: str, messages: list[BaseMessage]) -> str:
        return next(drafts)

    models = FakeModels(reply)
    async with open_test_app(models=models) as app:
        await run(app, "Sage?")
    assert models.count("sage") == 2
    assert port.posts[-1][2] == "Fine: ship it on Tuesday with a short note."


async def test_impersonated_lines_are_cut_before_posting(open_test_app, port):
    models = FakeModels(fixed_reply("Launch it next week, I say.\nSage: I agree completely!"))
    async with open_test_app(models=models) as app:
        await run(app, "Nova?")
    assert port.posts[-1][2] == "Launch it next week, I say."


async def test_a_persona_that_only_writes_others_lines_is_told_so_and_then_skipped(open_test_app, port):
    """A small model going on with the transcript ("[system] moderation on") is asked again with
    what was wrong: another's line, not a short one."""
    models = FakeModels(fixed_reply("[system] moderation on"))
    async with open_test_app(models=models) as app:
        await run(app, "Nova?")
    retried = models.calls[-1][1][-1].content
    assert "written as another participant or a system notice" in retried and "as Nova" in retried
    assert port.notices() == ["[system] Nova has no answer to that right now."]  # the reason is the log's


async def test_failing_persona_is_skipped_and_the_round_goes_on(app, port):
    await run(app, "Nova, Sage and Rex: !!fail 1")
    assert port.speakers() == ["sage", "rex"]
    assert port.notices() == ["[system] Nova has no answer to that right now."]


async def test_a_persona_that_keeps_writing_nothing_is_skipped_with_the_reason(open_test_app, port):
    models = FakeModels(fixed_reply(""))
    async with open_test_app(models=models) as app:
        await run(app, "Nova?")
    assert models.count("nova") == 3  # the first draft and two more tries, each with the reason
    assert port.notices() == ["[system] Nova has no answer to that right now."]


async def test_a_one_line_round_ends_after_more_than_half_failed_without_saying_round_stopped(app, port):
    await run(app, "Nova, Sage and Rex: !!fail 2")
    assert port.speakers() == []
    assert port.notices() == [
        "[system] Nova has no answer to that right now.",
        "[system] Sage has no answer to that right now.",
    ]
    await run(app, "Rex, still there?")  # the channel keeps working
    assert port.speakers() == ["rex"]


async def test_a_moderated_round_stops_when_more_than_half_of_its_turns_failed(open_test_app, port):
    decisions = [{"next_speaker": name, "reason": "keep going"} for name in ["Nova", "Sage"] * 10]
    models = FakeModels(fixed_reply(""), decisions)  # every draft empty: every turn fails
    async with open_test_app(models=models) as app:
        await app.service.run_command(KEY, Moderate("on"))  # up to 6 turns a round
        await run(app, "Debate!")
    assert port.notices()[-1] == "[system] Round stopped: more than half of its turns failed."
    assert port.speakers() == []


async def test_a_persona_nobody_named_is_skipped_without_a_notice(open_test_app, port):
    models = FakeModels(fixed_reply(""))
    async with open_test_app(models=models) as app:
        await run(app, "Anyone around?")
    assert port.speakers() == [] and port.notices() == []


async def test_repeated_event_is_answered_once(app, port):
    for _ in range(3):
        await app.service.handle(say("Sage, hi", event_id="evt-42"))
    await app.service.wait_idle()
    assert port.speakers() == ["sage"]


async def test_rounds_in_one_channel_are_serialized_and_channels_run_concurrently(open_test_app, port):
    release_a = asyncio.Event()
    b_done = asyncio.Event()
    running_in_a = 0
    most_at_once_in_a = 0

    async def reply(speaker: str, messages: list[BaseMessage]) -> str:
        nonlocal running_in_a, most_at_once_in_a
        if speaker == "sage":  # the only persona addressed in channel b
            b_done.set()
            return "Channel b is answered right away."
        running_in_a += 1
        most_at_once_in_a = max(most_at_once_in_a, running_in_a)
        await release_a.wait()
        running_in_a -= 1
        return fresh_reply(f"{speaker} answering in channel a", len(speaker))  # two lines, no copy

    async with open_test_app(models=FakeModels(reply)) as app:
        await app.service.handle(say("Nova, you first", "console:a"))
        await app.service.handle(say("Rex, you second", "console:a"))
        await app.service.handle(say("Sage, over here", "console:b"))
        await asyncio.wait_for(b_done.wait(), 5)  # b is answered while a's first round is still blocked
        release_a.set()
        await app.service.wait_idle()
    assert port.posts[0][:2] == ("console:b", "sage")
    assert port.speakers("console:a") == ["nova", "rex"]  # in the order the messages arrived
    assert most_at_once_in_a == 1  # never two rounds at once in one channel


async def test_invite_and_dismiss_change_who_can_reply(app, port):
    await app.service.run_command(KEY, Invite("pixel"))
    await app.service.run_command(KEY, Dismiss("nova"))
    await run(app, "Nova and Pixel, colours?")
    assert port.speakers() == ["pixel"]
    assert "[system] Pixel joined." in port.notices() and "[system] Nova left." in port.notices()


async def test_model_calls_per_message(open_test_app):
    decisions = [
        {"next_speaker": "Nova", "reason": "r"},
        {"next_speaker": "Sage", "reason": "r"},
        {"next_speaker": "FINISH", "reason": "r"},
    ]
    models = FakeModels(varied_reply("A reply long enough to pass review."), decisions)
    async with open_test_app(models=models) as app:
        await run(app, "Nova and Sage?")
        assert len(models.calls) == 2  # moderation off: one call per replying persona
        await app.service.run_command(KEY, Moderate("on"))
        await run(app, "And now?")
    # moderation on: 3 replies; moderator calls for Nova and Sage, none for Rex (the only one left), one for FINISH
    assert models.count("moderator") == 3 and len(models.calls) == 2 + 3 + 3

"""The round's node functions and one persona's turn: draft, review (and ask again), then deliver
or skip, with the breaker that pauses a channel after model failures in a row.

Who speaks, and where the round goes next, is graph.floor's (the Chair); the prompt is
graph.prompt_pages'. Each node returns the parts of the RoundState it changed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from itertools import takewhile
from typing import Any

from langgraph.graph import END
from langgraph.types import Command

from graph import routing, tracing, turn_rules
from graph.action_runner import ActionRunner
from graph.actions import tool_calls_of
from graph.deps import EngineDeps
from graph.floor import Chair
from graph.judge import JUDGE_SCHEMA, judge_draft
from graph.models.retry import ainvoke_with_retry
from graph.models.signatures import text_signature
from graph.observe import TURNS
from graph.prompt import INSTRUCTION_PHRASES
from graph.prompt_pages import PromptPages
from graph.review import (
    cut_impersonation,
    first_sentences,
    last_full_sentence,
    lines_to_avoid,
    passes_on,
    review_draft,
    review_reply,
    written_as_another,
)
from graph.state import Floor, RoundInput, RoundState, TurnResult
from graph.tool_steps import Draft, Steps, ToolSteps
from graph.turn_text import TURN_PHRASES, TurnAsk, question_tokens_at_most, turn_message
from personas import Persona
from storage import channels, history, rounds
from storage.database import one_transaction
from storage.records import LineKind

log = logging.getLogger(__name__)

Update = dict[str, Any]

TOKEN_LIMIT = {"length", "MAX_TOKENS", "max_tokens"}  # finish reasons of a reply cut by its token limit
REVIEW_WINDOW = 50  # the newest lines of a persona's prompt its draft must not repeat
LEAK_PHRASES = (*INSTRUCTION_PHRASES, *TURN_PHRASES)  # the words of its instructions and of its turn's question
MUST_ANSWER = "you were asked by name, so answer the question instead of passing"


class RoundNodes:
    def __init__(self, deps: EngineDeps, runner: ActionRunner) -> None:
        self.deps = deps
        self.runner = runner
        self.chair = Chair(deps)
        self.prompts = PromptPages(deps)
        self.tool_steps = ToolSteps(deps, runner, self.drafted)

    # -- nodes: a graph step picks the next speaker and runs its turn ----------------------------
    # LangGraph's work per step is a large share of a turn that takes no model time.

    async def start(self, state: RoundState) -> Command[str]:
        """The round's settings, then its first pick and turn, in one step. A round run on after a
        crash (a turn of it was committed) goes straight to its next step."""
        if state["floor"].turns_taken:
            return onward({}, state["floor"])
        return await self._then_turn(state["round"], await self.chair.begin(state["round"]))

    async def moderator(self, state: RoundState) -> Command[str]:
        return await self._then_turn(state["round"], await self.chair.moderate(state["round"], state["floor"]))

    async def advance(self, state: RoundState) -> Command[str]:
        return await self._then_turn(state["round"], self.chair.advance(state["floor"]))

    async def _then_turn(self, round_input: RoundInput, floor: Floor) -> Command[str]:
        if not floor.speaker:
            return onward({"floor": floor}, floor)
        floor, result = await self.turn(round_input, floor)
        return onward({"floor": floor, "turn": result, "batches": [result.batch] if result.batch else []}, floor)

    # -- one turn --------------------------------------------------------------------------------

    async def turn(self, round_input: RoundInput, floor: Floor, *, of_round: bool = True) -> tuple[Floor, TurnResult]:
        """floor.speaker's turn in one graph step: its tool steps (graph.tool_steps), then deliver or
        skip; returns the floor after it. The turn is one invoke_agent span, its model calls chat
        spans inside it. A task's step or answer is no turn `of_round`: the channel's running round
        (one a crash cut short waits there for the recovery that runs tasks first) keeps its progress."""
        speaker = floor.speaker or ""
        heard = tuple(self.chair.name(spoke) or spoke for spoke in floor.spoken_since_human)
        round_input = replace(round_input, heard=heard)
        with tracing.agent_span(self.chair.name(speaker) or speaker, round_input.channel_key, speaker):
            steps = await self.tool_steps.run(round_input, speaker)
            draft = steps.draft
            TURNS.labels("skipped" if draft.failed else "passed" if draft.passed else "spoke").inc()
            # The turn's last line, its posts (the outbox) and the round's progress commit together: a
            # round cut by a crash goes on after its last committed turn, and says nothing twice. Its
            # tool steps committed their calls and results before, each action outside a transaction.
            async with one_transaction(self.deps.db):
                if draft.passed:
                    floor, result = await self.pass_turn(round_input, floor)
                elif not draft.failed:
                    floor, result = await self.deliver(round_input, floor, steps)
                else:
                    floor, result = await self.skip(round_input, floor, draft, of_round=of_round)
                if of_round:
                    await rounds.save_turn(self.deps.db, round_input.channel_key, floor.saved(), result.batch)
            if floor.moderated and floor.moderated_now:
                # What is not queued (the console) is shown at the commit, just now: a /moderate off
                # that came while it was shown ends the round after this turn, as during the turn.
                channel = await channels.get_channel(self.deps.db, round_input.channel_key)
                floor = replace(floor, moderated_now=bool(channel and channel.moderated))
            return floor, result

    async def drafted(self, round_input: RoundInput, speaker: str) -> Draft:
        """One model step: draft, review (and ask again), each move chosen by graph.routing."""
        draft = Draft()
        while True:
            draft = await self.persona(round_input, speaker, draft)
            step = routing.after_draft(turn_failed=draft.failed)
            if step == "review":
                draft = await self.review(round_input, speaker, draft)
                step = routing.after_review(review_note=draft.review_note, turn_failed=draft.failed)
            if step != "persona":
                return draft

    async def persona(self, round_input: RoundInput, speaker: str, draft: Draft) -> Draft:
        persona = self.deps.personas[speaker]
        key = round_input.channel_key
        ask = TurnAsk(
            speaker=persona.display_name,
            asker=round_input.author_name,
            line=round_input.text,
            addressed=False,
            stance=persona.stance,
            answered_by=round_input.heard,
            retry_reason=draft.review_note,
        )
        messages, speakers = await self.prompts.prompt_and_speakers(key, persona, question_tokens_at_most(ask))
        # A tool's result is not a line said in the conversation: relaying it is the point of asking.
        window = tuple(str(m.content) for m in messages[-REVIEW_WINDOW:] if m.type not in ("system", "tool"))
        answers = list(takewhile(lambda m: m.type == "tool", reversed(messages)))  # the newest, system first
        tool_answer = "\n".join(str(m.content) for m in reversed(answers))
        others = [s.name for s in speakers if s.id != persona.id]
        was_addressed = persona.id in routing.addressed(round_input.text, round_input.mentions, speakers)
        by_person = was_addressed and bool(round_input.author_name)
        ask = replace(
            ask,
            addressed=was_addressed,
            may_pass=turn_rules.may_pass(
                heard_already=bool(round_input.heard),
                addressed_by_person=by_person,
                task_step=round_input.task is not None,
                relay=bool(answers),
            ),
            relay=bool(answers),
        )
        # The question, and a retry's note with it, go after the history as an instruction: never stored.
        messages.append(turn_message(ask, [s.name for s in speakers]))
        names = [*others, round_input.author_name] if round_input.author_name else others  # none in a follow-up
        model = self.deps.models.persona_model(persona, names, addressed=was_addressed)
        settings = self.deps.settings
        try:
            async with self.deps.port.typing(key, persona):
                reply = await ainvoke_with_retry(
                    model, messages, attempts=settings.model_attempts, backoff_seconds=settings.backoff_seconds
                )
        except Exception as exc:
            log.warning("persona %s failed in %s: %s", persona.id, key, type(exc).__name__)
            return replace(
                draft, failed=True, failure="model error", text="", tool_calls=(), signature=None, addressed=by_person
            )
        if self.runner.mailbox is not None:
            await self.runner.mailbox.mark_read(key, persona.id, messages)
        text = str(reply.text)
        if reply.response_metadata.get("finish_reason") in TOKEN_LIMIT:
            text = last_full_sentence(text)  # a reply cut by the token limit ends at its last full sentence
        return replace(
            draft,
            failed=False,
            text=text,
            tool_calls=tuple(tool_calls_of(reply)),
            window=window,
            tool_answer=tool_answer,
            signature=text_signature(reply),
            addressed=by_person,
            passed=False,
            may_pass=ask.may_pass,
        )

    async def review(self, round_input: RoundInput, speaker: str, draft: Draft) -> Draft:
        persona = self.deps.personas[speaker]
        if not draft.tool_calls and turn_rules.is_pass(draft.text):
            if draft.may_pass:
                return replace(draft, text="", review_note="", passed=True, failed=False, failure="")
            if draft.review_attempts < self.deps.settings.max_review_retries:
                return replace(draft, text="", review_note=MUST_ANSWER, review_attempts=draft.review_attempts + 1)
            return replace(draft, text="", review_note="", failed=True, failure="it passed on a question put to it")
        others = [p.display_name for p in self.deps.personas.values() if p.id != persona.id]
        if round_input.author_name:  # none in a follow-up
            others.append(round_input.author_name)
        text = cut_impersonation(draft.text, persona.display_name, others)
        text = first_sentences(text, self.deps.settings.max_sentences)  # a chat line's length
        acting_silently = not text and bool(draft.tool_calls)
        # A short answer that quotes the tool (a code, a place) answers the person who asked; "What?" does not.
        min_chars = 1 if passes_on(text, draft.tool_answer) else self.deps.settings.min_chars
        # Echoes, copies, leaks and another's voice are never posted; a draft that is only short or
        # stiff is, once the retries are spent.
        unfit = None if draft.tool_calls else written_as_another(draft.text, text, persona.display_name)
        if text:
            unfit = review_draft(
                text,
                window=lines_to_avoid(draft.window, round_input.gathers),
                answered=round_input.text,
                own_name=persona.display_name,
                other_names=others,
                leak_phrases=LEAK_PHRASES,
                examples=persona.examples,
                note=draft.review_note,
            )
        if text and not unfit and self.deps.settings.judge and not review_reply(text, min_chars):
            unfit = await self._judge(persona, draft.window, text)
        if draft.tool_calls and (unfit or review_reply(text, min_chars)):
            # A turn that acts is not written again (that would ask for its calls again): its calls go
            # their way (check, policy, approval) and only the words unfit to post ("Sure.") are dropped.
            return replace(draft, text="", review_note="", failed=False, failure="")
        reason = None if acting_silently else unfit or review_reply(text, min_chars)
        if reason and draft.review_attempts < self.deps.settings.max_review_retries:
            return replace(draft, text="", review_note=reason, review_attempts=draft.review_attempts + 1)
        if unfit:
            failure = f"{unfit.split(';')[0]}, also when asked again"
            return replace(draft, text="", tool_calls=(), review_note="", failed=True, failure=failure)
        failed = not text and not acting_silently
        return replace(
            draft,
            text=text,
            review_note="",
            failed=failed,
            failure="the model wrote nothing usable, also when asked again" if failed else "",
        )

    async def _judge(self, persona: Persona, window: Sequence[str], text: str) -> str | None:
        """The judge's reason to write the draft again, or None (fit, or no verdict to be had)."""
        settings = self.deps.settings
        model = self.deps.models.judge_model(JUDGE_SCHEMA)
        judgement = await judge_draft(
            model, persona, window, text, attempts=settings.model_attempts, backoff_seconds=settings.backoff_seconds
        )
        return judgement.note if judgement else None

    async def deliver(self, round_input: RoundInput, floor: Floor, steps: Steps) -> tuple[Floor, TurnResult]:
        persona = self.deps.personas[floor.speaker or ""]
        key, thread = round_input.channel_key, round_input.thread
        await self.tool_steps.conclude(key, thread, persona, steps)
        channel = await channels.get_channel(self.deps.db, key)
        if channel and channel.failures_in_a_row:  # a turn that speaks ends a run of failures
            await channels.reset_failures(self.deps.db, key)
        after = await self.chair.turn_over(round_input, floor, channel, spoke=persona.id)
        return after, TurnResult(persona.id, delivered=True, batch=steps.batch)

    async def pass_turn(self, round_input: RoundInput, floor: Floor) -> tuple[Floor, TurnResult]:
        """The persona had nothing new to add: it posts nothing, and the round goes on as after a turn."""
        log.info("persona %s passed in %s", floor.speaker, round_input.channel_key)
        channel = await channels.get_channel(self.deps.db, round_input.channel_key)
        after = await self.chair.turn_over(round_input, floor, channel, spoke=None, passed=True)
        return after, TurnResult(floor.speaker or "", delivered=False, passed=True)

    async def skip(
        self, round_input: RoundInput, floor: Floor, draft: Draft, *, of_round: bool = True
    ) -> tuple[Floor, TurnResult]:
        """A turn without a usable reply. A task's step says why in its channel (the task reports
        on it); a chat round tells only the person who named the persona, in a short line, and
        "Round stopped" only in a moderated round (graph.turn_rules)."""
        key, thread = round_input.channel_key, round_input.thread
        name = self.chair.name(floor.speaker) or floor.speaker or "someone"
        why = draft.failure or "model error"
        log.info("persona %s was skipped in %s: %s", floor.speaker, key, why)
        if not of_round:
            await self.deps.port.notice(key, f"{name} could not answer ({why}) and was skipped.", thread)
        elif notice := turn_rules.skip_notice(name, addressed_by_person=draft.addressed):
            await self.deps.port.notice(key, notice, thread)
        channel = await channels.get_channel(self.deps.db, key)
        after = await self.chair.turn_over(round_input, floor, channel, spoke=None)
        if turn_rules.says_round_stopped(
            moderated=floor.moderated, failures=after.failures, planned_turns=floor.planned_turns
        ):
            await self.deps.port.notice(key, turn_rules.ROUND_STOPPED, thread)
        # Stored with the channel: a restart, or another process's next round, goes on counting.
        in_a_row = await channels.count_failure(self.deps.db, key)
        if in_a_row == self.deps.settings.failures_before_pause:
            after = replace(after, stopped=True)
            await self._pause_after_failures(key, in_a_row, thread)
        elif in_a_row == self.deps.settings.failures_before_alert:
            await self.deps.port.notify_approvers(key, f"The model failed {in_a_row} times in a row in this channel.")
        return after, TurnResult(floor.speaker or "", delivered=False, failure=why)

    async def _pause_after_failures(self, key: str, in_a_row: int, thread: str | None) -> None:
        """Stop answering until an approver resumes: the same stored pause as /moderate pause."""
        await channels.reset_failures(self.deps.db, key)
        if not await channels.pause_after_failures(self.deps.db, key):
            return  # paused already, by a person
        await history.append_line(self.deps.db, key, LineKind.MARKER, "system", "system", "replies paused")
        why = f"after {in_a_row} model failure{'s' if in_a_row > 1 else ''} in a row"
        await self.deps.port.notice(
            key, f"Replies are paused {why}. Messages are kept; an approver resumes with /moderate resume.", thread
        )
        await self.deps.port.notify_approvers(
            key, f"Replies in this channel are paused {why}. Resume with /moderate resume."
        )


# -- where a step goes: the Chair says ------------------------------------------------------------


def onward(update: Update, floor: Floor) -> Command[str]:
    """A step's update and the round's next step, in one Command: a conditional edge would be one
    more traced runnable per step, a large share of a turn that takes no model time."""
    step = Chair.next_step(floor)
    return Command(update=update, goto=END if step == "end" else step)

"""A persona turn's tool steps: model call -> its tool calls (check, policy, run now or wait) -> the
same persona's model again with the results paired to its calls, until a reply has no tool call,
a call waits for a person, or `[actions] max_steps` model calls were made.

One path for a round's turn (graph/nodes.py, in a task step and a moderated round alike) and for
the follow-up once a person decided the waiting calls (graph/approval_flow.py). Each step's calls
and words are stored with the batch of them that waits (and, when that batch ends the turn, with
the post of its words), before its actions run; each action runs outside any transaction
(graph/action_runner.py claims it durably). The turn's other last words are stored and posted by
`conclude`, inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from graph import routing
from graph.action_runner import ActionRunner, PersonaStep
from graph.actions import stored_calls
from graph.deps import EngineDeps
from graph.observe import TOOL_STEP_LIMITS
from graph.state import Batch, RoundInput
from personas import Persona
from storage import history
from storage.records import Approval


@dataclass(frozen=True, slots=True)
class Draft:
    """One model step's work in progress: the persona's reply and how its review went."""

    text: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()  # as the model returned them
    signature: str | None = None  # the thought signature on the reply's text (Gemini 3), stored with it
    review_attempts: int = 0
    review_note: str = ""  # why the last draft was not posted: the persona is asked again with it
    failed: bool = False
    failure: str = ""  # why the turn failed, for the notice
    window: tuple[str, ...] = ()  # the prompt's lines the draft was written from: it must not repeat them
    tool_answer: str = ""  # what its tools just answered, if it is written right after: a short reply may pass it on
    addressed: bool = False  # a person's line named the persona: it may not pass, and a skip is said to them
    may_pass: bool = False  # the turn's question offered the pass word (graph/turn_rules.py)
    passed: bool = False  # the persona passed: nothing to post, and no failure


@dataclass(frozen=True, slots=True)
class Steps:
    """How a turn's tool steps ended: the last draft (its calls, if any, never run), the batch its
    last calls left waiting, and what is still to be stored and posted."""

    draft: Draft
    batch: Batch | None = None
    stored: bool = False  # the last draft's line is in history already (it made calls)
    stopped_at: int = 0  # the step limit it reached, or 0
    last_words: str = ""  # the newest words of an earlier step, stored but not yet posted
    notice: str = ""  # why the steps ended early (the channel's token budget), posted instead of words


Drafted = Callable[[RoundInput, str], Awaitable[Draft]]
"""One model step of a persona (draft and review): graph/nodes.py's RoundNodes.drafted."""


def step_limit_notice(name: str, steps: int) -> str:
    return f"{name} stopped after {steps} tool steps."


class ToolSteps:
    def __init__(self, deps: EngineDeps, runner: ActionRunner, drafted: Drafted) -> None:
        self.deps = deps
        self.runner = runner
        self.drafted = drafted

    async def run(
        self, round_input: RoundInput, speaker: str, rejected: Sequence[Approval] = (), earlier_calls: int = 0
    ) -> Steps:
        """The persona's model steps until it answers without a tool call, a call waits for a person,
        or the step limit. `rejected` are proposals just turned down (a follow-up): a new call may
        revise one of them. `earlier_calls`: the calls the turn made before its follow-up, counted
        with each step's own against [approvals] max_actions_per_turn."""
        persona = self.deps.personas[speaker]
        key, thread = round_input.channel_key, round_input.thread
        limit = self.deps.settings.max_tool_steps
        last_words = ""
        turn_calls = earlier_calls  # every call of the turn so far, in every step, built-in ones too
        step = 0
        while True:
            step += 1
            refusal = await self.deps.budget(key) if self.deps.budget is not None and step > 1 else None
            if refusal is not None:  # the budget ran out in the middle: the turn ends with its notice
                return Steps(Draft(), stored=True, notice=refusal)
            draft = await self.drafted(round_input, speaker)
            move = routing.after_tool_step(
                failed=draft.failed, has_calls=bool(draft.tool_calls), step=step, max_steps=limit
            )
            if move == "answer":
                return Steps(draft, last_words=last_words)
            if move == "limit":
                TOOL_STEP_LIMITS.inc()
                # Its calls are not run: their results would reach no model call.
                return Steps(replace(draft, tool_calls=()), stopped_at=step, last_words=last_words)
            # The step's words are kept with its calls, and posted only if the turn ends here.
            step_line = PersonaStep(draft.text, stored_calls(draft.tool_calls), draft.signature)
            batch = await self.runner.handle(
                key, thread, persona, step_line, rejected, task=round_input.task, earlier_calls=turn_calls
            )
            turn_calls += len(step_line.calls)
            rejected = ()
            if batch:  # its words went out with it (ActionRunner.handle)
                return Steps(replace(draft, text=""), batch=batch, stored=True)
            last_words = draft.text or last_words

    async def conclude(self, key: str, thread: str | None, persona: Persona, steps: Steps) -> None:
        """Store and post the turn's words: the last reply's; at the step limit, the persona's last
        words, or one notice that it stopped."""
        draft = steps.draft
        if draft.text and not steps.stored:
            # A reply cut at the step limit lost its calls, so its text's signature is not replayed.
            signature = None if steps.stopped_at else draft.signature
            await history.append_persona_turn(
                self.deps.db, key, persona.id, persona.display_name, draft.text, [], signature
            )
        said = draft.text or (steps.last_words if steps.stopped_at else "")
        if steps.notice:
            await self.deps.port.notice(key, steps.notice, thread)
        elif said:
            await self.deps.port.post(key, persona, said, thread)
        elif steps.stopped_at:
            await self.deps.port.notice(key, step_limit_notice(persona.display_name, steps.stopped_at), thread)

"""The round's node functions. Each reads what it needs, does one thing and returns a state update."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from graph import routing
from graph.action_runner import ActionRunner
from graph.actions import tool_calls_of
from graph.deps import EngineDeps
from graph.models.base import ChatRunnable
from graph.models.retry import ainvoke_with_retry
from graph.moderator import moderator_messages, parse_decision, reask_messages, shown_reason
from graph.policy import is_sensitive
from graph.prompt import MessageCache, Rendered, max_lines_within, messages_within, prompt_from, system_text
from graph.review import cut_impersonation, review_reply
from graph.routing import FINISH, Speaker
from graph.state import RoundState
from personas import Persona
from storage import channels, history
from storage.records import Channel, LineKind, ToolCall

log = logging.getLogger(__name__)

Update = dict[str, Any]

FIRST_PAGE = 64  # rows read first for a prompt nothing is known about yet
PAGE_MARGIN = 8  # rows read beyond last time's prompt, which is usually enough for the next one
MAX_PAGE_HINTS = 10_000


class RoundNodes:
    def __init__(self, deps: EngineDeps, runner: ActionRunner) -> None:
        self.deps = deps
        self.runner = runner
        self._failures_in_a_row: dict[str, int] = {}
        # (channel, persona) -> rows to read first for its next prompt: only a guess, never a result.
        self._page_hints: dict[tuple[str, str], int] = {}
        self._messages = MessageCache()

    # -- helpers -----------------------------------------------------------------------------

    async def _speakers(self, channel_key: str) -> list[Speaker]:
        ids = await channels.participants(self.deps.db, channel_key)
        return [
            Speaker(id=p.id, name=p.display_name, talkativeness=p.talkativeness)
            for p in (self.deps.personas.get(i) for i in ids)
            if p is not None
        ]

    def _name(self, persona_id: str | None) -> str | None:
        persona = self.deps.personas.get(persona_id or "")
        return persona.display_name if persona else persona_id

    def _label(self, choice: str) -> str:
        """A persona's display name, or FINISH as it is."""
        return self._name(choice) or choice

    def _labels(self, choices: Sequence[str]) -> list[str]:
        return [self._label(c) for c in choices]

    async def persona_prompt(self, channel_key: str, persona: Persona) -> list[BaseMessage]:
        """Exactly what the persona receives: also what `python -m bot prompt` prints."""
        messages, _ = await self._prompt_and_speakers(channel_key, persona)
        return messages

    async def _prompt_and_speakers(self, channel_key: str, persona: Persona) -> tuple[list[BaseMessage], list[Speaker]]:
        channel = await channels.get_channel(self.deps.db, channel_key)
        speakers = await self._speakers(channel_key)
        others = [s.name for s in speakers if s.id != persona.id]
        budget = self.deps.settings.token_budget
        needs_approval = [a for a in persona.actions if is_sensitive(a, self.deps.policy.sensitive)]
        system = system_text(persona, others, channel.scene if channel else "", needs_approval)
        newest_first = await self._messages_within_budget(channel_key, persona.id, system, budget)
        return prompt_from(system, newest_first), speakers

    async def _messages_within_budget(
        self, channel_key: str, persona_id: str, system: str, budget: int
    ) -> list[BaseMessage]:
        """The messages of the newest lines delivered to the persona that fit the budget, newest
        first, read in pages until the budget is full: the same as assemble_prompt over
        max_lines_within(budget) rows read at once."""
        limit = max_lines_within(budget)
        hint = (channel_key, persona_id)
        page = min(limit, self._page_hints.pop(hint, FIRST_PAGE))
        ids: list[int] = []
        known: dict[int, Rendered] = {}
        before = None
        while True:
            # Ids first: most lines were rendered for an earlier prompt, and only the others are read.
            page_ids = await history.recent_line_ids_for(
                self.deps.db, channel_key, persona_id, limit=page, before_id=before
            )
            for line_id in page_ids:
                if (item := self._messages.get(line_id, persona_id)) is not None:
                    known[line_id] = item
            for line in await history.lines_by_id(self.deps.db, [i for i in page_ids if i not in known]):
                known[line.id] = self._messages.add(line, persona_id)
            ids += page_ids
            kept, full = messages_within(system, ids, budget, known.__getitem__)
            if full or len(page_ids) < page or len(ids) >= limit:
                break
            before = page_ids[-1]
            page = min(limit - len(ids), page * 2)
        # Next time, one page should do: a prompt's length changes little from one turn to the next.
        self._page_hints[hint] = len(kept) + PAGE_MARGIN
        if len(self._page_hints) > MAX_PAGE_HINTS:
            del self._page_hints[next(iter(self._page_hints))]
        return kept

    async def _invoke(self, model: ChatRunnable, messages: list[BaseMessage]) -> BaseMessage:
        settings = self.deps.settings
        return await ainvoke_with_retry(
            model, messages, attempts=settings.model_attempts, backoff_seconds=settings.backoff_seconds
        )

    # -- nodes -------------------------------------------------------------------------------

    async def start(self, state: RoundState) -> Update:
        """The round's settings, then its first pick and turn, in one step."""
        begun = await self._begin(state)
        current: Any = {**state, **begun}
        first = self.moderator if routing.first_pick(moderated=begun["moderated"]) == "moderator" else self.select
        return {**begun, **await first(current)}

    async def _begin(self, state: RoundState) -> Update:
        channel = await channels.get_channel(self.deps.db, state["channel_key"])
        if channel and channel.stop_requested:  # a /stop that came between rounds stops nothing
            await channels.take_stop_request(self.deps.db, state["channel_key"])
        moderated = bool(channel and channel.moderated)
        max_turns = (channel.max_turns if channel else None) or self.deps.settings.max_turns
        # A moderated round follows a human line, so nobody has "just spoken" yet; an unmoderated
        # round keeps the channel's last persona from answering itself straight away.
        last = None if moderated else await history.last_persona_speaker(self.deps.db, state["channel_key"])
        return {"moderated": moderated, "moderated_now": moderated, "max_turns": max_turns, "last_speaker": last}

    # A graph step picks the next speaker and runs its turn: LangGraph's work per step is a large
    # share of a turn that takes no model time. Where the round goes next is routing's business.

    async def select(self, state: RoundState) -> Update:
        return await self._then_turn(state, await self._select(state))

    async def moderator(self, state: RoundState) -> Update:
        return await self._then_turn(state, await self._moderate(state))

    async def advance(self, state: RoundState) -> Update:
        return await self._then_turn(state, {"speaker": state["queue"][0], "queue": state["queue"][1:]})

    async def _then_turn(self, state: RoundState, picked: Update) -> Update:
        if not picked.get("speaker"):
            return picked
        current: Any = {**state, **picked}
        return {**picked, **await self.turn(current)}

    async def _select(self, state: RoundState) -> Update:
        speakers = await self._speakers(state["channel_key"])
        order = routing.speakers_for_unmoderated_round(
            state["text"], state["mentions"], speakers, state["last_speaker"], self.deps.rng
        )
        order = routing.nominated_first(order, await self._nominee(state["channel_key"]), [s.id for s in speakers])
        if not order:
            return {"speaker": None, "queue": [], "planned_turns": 0}
        return {"speaker": order[0], "queue": order[1:], "planned_turns": len(order)}

    async def _moderate(self, state: RoundState) -> Update:
        key = state["channel_key"]
        speakers = await self._speakers(key)
        if not speakers:
            return {"speaker": None}
        channel = await channels.get_channel(self.deps.db, key)
        addressed_ids = routing.addressed(state["text"], state["mentions"], speakers)
        options = routing.moderator_options(
            speakers,
            addressed_ids,
            had_turn=[*state["spoken_since_human"], *state["skipped"]],
            last_speaker=state["last_speaker"],
            turns_taken=state["turns_taken"],
        )
        invitees = self._invitees(channel, speakers)
        options = routing.with_invitees(options, [s.id for s in invitees], len(speakers), self.deps.settings.team_cap)
        nominee = await self._nominee(key, channel)
        if nominee in {s.id for s in speakers}:
            pick, reason = nominee, routing.NOMINATED
        elif options.forced:
            pick, reason = options.forced, options.forced_reason
        else:
            pick, reason = await self._ask_moderator(key, speakers, addressed_ids, options, state, channel, invitees)
        pick_name = self._label(pick)
        reason = shown_reason(pick_name, reason, self._labels(state["spoken_since_human"]))
        decision = f"[moderator] next: {pick_name} ({reason})"
        show = channel.show_reasons if channel and channel.show_reasons is not None else self.deps.settings.show_reasons
        if show:
            await self.deps.port.show_reason(key, decision, state["thread"])
        else:
            await self.deps.port.trace(key, decision)
        decisions = [*state["decisions"], f"{pick_name} ({reason})"]
        if pick == FINISH:
            return {"speaker": None, "decisions": decisions}
        if pick in {s.id for s in invitees}:
            await self._recruit(key, pick, reason, state["thread"])
        return {"speaker": pick, "planned_turns": state["max_turns"], "decisions": decisions}

    async def _nominee(self, key: str, channel: Channel | None = None) -> str | None:
        """The persona named with /next, taken (used up) when there is one."""
        channel = channel or await channels.get_channel(self.deps.db, key)
        return await channels.take_next_speaker(self.deps.db, key) if channel and channel.next_speaker else None

    def _invitees(self, channel: Channel | None, present: list[Speaker]) -> list[Speaker]:
        """Library personas with expertise the moderator may invite, when recruitment is on."""
        allowed = channel.recruit if channel and channel.recruit is not None else self.deps.settings.recruit
        if not allowed:
            return []
        here = {s.id for s in present}
        return [
            Speaker(id=p.id, name=p.display_name, talkativeness=p.talkativeness)
            for p in self.deps.personas.values()
            if p.id not in here and p.expertise
        ]

    async def _recruit(self, key: str, persona_id: str, reason: str, thread: str | None) -> None:
        persona = self.deps.personas[persona_id]
        why = f"invited by the moderator: {reason}"
        # Like /invite: the newcomer sees nothing from before it joined.
        await history.set_membership(
            self.deps.db, key, persona_id, active=True, marker_text=f"{persona.display_name} joined ({why})"
        )
        await self.deps.port.notice(key, f"{persona.display_name} joined ({why}).", thread)

    async def _ask_moderator(
        self,
        key: str,
        speakers: list[Speaker],
        addressed_ids: list[str],
        options: routing.ModeratorOptions,
        state: RoundState,
        channel: Channel | None,
        invitees: list[Speaker],
    ) -> tuple[str, str]:
        """The model's pick among the options and its reason; after two invalid answers, a fallback."""
        lines = await history.recent_channel_lines(self.deps.db, key, limit=self.deps.settings.moderator_window)
        choice_names = self._labels(options.choices)
        invited = [s for s in invitees if s.id in options.choices]
        messages = moderator_messages(
            lines,
            participant_names=[s.name for s in speakers],
            addressed=self._labels(addressed_ids),
            spoken_since_human=self._labels(state["spoken_since_human"]),
            last_speaker=self._name(state["last_speaker"]),
            choices=choice_names,
            instructions=(channel.moderator_prompt if channel else "") or self.deps.settings.moderator_prompt,
            invitations={s.name: self.deps.personas[s.id].expertise for s in invited},
        )
        speakers = [*speakers, *invited]  # an invitation is picked by name like a participant
        model = self.deps.models.moderator_model(choice_names)  # constrained decoding keeps to the choices
        for _ in range(2):  # the first answer, and one more with the error attached
            try:
                answer = (await self._invoke(model, messages)).text
            except Exception as exc:  # a failing moderator falls back below
                log.warning("moderator model failed in %s: %s", key, type(exc).__name__)
                break
            parsed = parse_decision(answer)
            error: str | None
            if isinstance(parsed, str):
                error = parsed
            else:
                checked, error = routing.check_moderator_pick(parsed[0], speakers, options)
                if checked is not None:
                    return checked, parsed[1]
            assert error is not None
            messages = reask_messages(messages, answer, error)
        if options.may_finish:
            return FINISH, routing.FALLBACK_FINISH
        fallback = routing.natural_pick([s for s in speakers if s.id in options.choices], None, self.deps.rng)
        assert fallback is not None  # a choice the model is asked about has at least two options
        return fallback, routing.FALLBACK_PICK

    async def turn(self, state: RoundState) -> Update:
        """One persona turn in one graph step: draft, review (and ask again), then deliver or skip.
        Each step is chosen by the pure functions in graph.routing."""
        current: dict[str, Any] = dict(state)
        update: Update = {}

        async def run(step: Any) -> None:
            changes = await step(current)
            current.update(changes)
            update.update(changes)

        while True:
            await run(self.persona)
            step = routing.after_draft(turn_failed=current["turn_failed"])
            if step == "review":
                await run(self.review)
                step = routing.after_review(review_note=current["review_note"], turn_failed=current["turn_failed"])
            if step != "persona":
                break
        await run(self.deliver if step == "deliver" else self.skip)
        return update

    async def persona(self, state: RoundState) -> Update:
        persona = self.deps.personas[state["speaker"] or ""]
        key = state["channel_key"]
        messages, speakers = await self._prompt_and_speakers(key, persona)
        if state["review_note"]:
            messages.append(
                HumanMessage(
                    content=f"[system] Your last draft was not posted: {state['review_note']}. Write it again."
                )
            )
        others = [s.name for s in speakers if s.id != persona.id]
        was_addressed = persona.id in routing.addressed(state["text"], state["mentions"], speakers)
        model = self.deps.models.persona_model(persona, [*others, state["author_name"]], addressed=was_addressed)
        try:
            async with self.deps.port.typing(key, persona):
                reply = await self._invoke(model, messages)
        except Exception as exc:
            log.warning("persona %s failed in %s: %s", persona.id, key, type(exc).__name__)
            return {"turn_failed": True, "failure": "model error", "draft": "", "tool_calls": []}
        if self.runner.mailbox is not None:
            await self.runner.mailbox.mark_read(key, persona.id, messages)
        return {"turn_failed": False, "draft": reply.text, "tool_calls": tool_calls_of(reply)}

    async def review(self, state: RoundState) -> Update:
        persona = self.deps.personas[state["speaker"] or ""]
        others = [p.display_name for p in self.deps.personas.values() if p.id != persona.id]
        text = cut_impersonation(state["draft"], persona.display_name, [*others, state["author_name"]])
        acting_silently = not text and bool(state["tool_calls"])
        reason = None if acting_silently else review_reply(text, self.deps.settings.min_chars)
        if reason and state["review_attempts"] < self.deps.settings.max_review_retries:
            return {"draft": "", "review_note": reason, "review_attempts": state["review_attempts"] + 1}
        failed = not text and not acting_silently
        return {
            "draft": text,
            "review_note": "",
            "turn_failed": failed,
            "failure": "the model wrote nothing usable, also when asked again" if failed else "",
        }

    async def deliver(self, state: RoundState) -> Update:
        persona = self.deps.personas[state["speaker"] or ""]
        key = state["channel_key"]
        self._failures_in_a_row[key] = 0
        calls = [ToolCall(c["id"], c["name"], c["args"]) for c in state["tool_calls"]]
        if calls:
            await history.append_persona_turn(
                self.deps.db, key, persona.id, persona.display_name, state["draft"], calls
            )
        elif state["draft"]:
            await history.append_line(
                self.deps.db, key, LineKind.PERSONA, persona.id, persona.display_name, state["draft"]
            )
        if state["draft"]:
            await self.deps.port.post(key, persona, state["draft"], state["thread"])
        update = await self._turn_over(state, spoke=persona.id)
        if calls:
            batch = await self.runner.handle(key, state["thread"], persona, calls)
            if batch:
                update["new_batches"] = [*state["new_batches"], batch]
        return update

    async def skip(self, state: RoundState) -> Update:
        key = state["channel_key"]
        name = self._name(state["speaker"])
        why = state["failure"] or "model error"
        await self.deps.port.notice(key, f"{name} could not answer ({why}) and was skipped.", state["thread"])
        update = await self._turn_over(state, spoke=None)
        if routing.too_many_failures(update["failures"], state["planned_turns"]):
            await self.deps.port.notice(key, "Round stopped: more than half of its turns failed.", state["thread"])
        in_a_row = self._failures_in_a_row.get(key, 0) + 1
        self._failures_in_a_row[key] = in_a_row
        if in_a_row == self.deps.settings.failures_before_pause:
            update["stopped"] = True
            await self._pause_after_failures(key, in_a_row, state["thread"])
        elif in_a_row == self.deps.settings.failures_before_alert:
            await self.deps.port.notify_approvers(key, f"The model failed {in_a_row} times in a row in this channel.")
        return update

    async def _pause_after_failures(self, key: str, in_a_row: int, thread: str | None) -> None:
        """Stop answering until an approver resumes: the same stored pause as /moderate pause."""
        self._failures_in_a_row[key] = 0
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

    async def _turn_over(self, state: RoundState, spoke: str | None) -> Update:
        channel = await channels.get_channel(self.deps.db, state["channel_key"])
        update: Update = {
            "turns_taken": state["turns_taken"] + 1,
            "failures": state["failures"] + (0 if spoke else 1),
            "moderated_now": bool(channel and channel.moderated),
            "draft": "",
            "review_attempts": 0,
            "review_note": "",
            "turn_failed": False,
            "failure": "",
            "tool_calls": [],
        }
        if channel and channel.stop_requested and await channels.take_stop_request(self.deps.db, state["channel_key"]):
            update["stopped"] = True
            await self.deps.port.notice(state["channel_key"], "Round stopped (/stop).", state["thread"])
        elif channel and channel.next_speaker and not state["moderated"]:
            present = await channels.participants(self.deps.db, state["channel_key"])
            update["queue"] = routing.nominated_first(
                state["queue"], await self._nominee(state["channel_key"], channel), present
            )
        if spoke:
            update["last_speaker"] = spoke
            update["spoken_since_human"] = [*state["spoken_since_human"], spoke]
        elif state["speaker"]:
            update["skipped"] = [*state["skipped"], state["speaker"]]
        return update


# -- edges: functions over the state ------------------------------------------------------------
# async only because LangGraph runs a sync edge in its thread pool: a thread trip per edge.


async def after_turn(state: RoundState) -> str:
    """After a step that picked a speaker and ran its turn (or picked nobody)."""
    step = routing.after_turn(
        moderated=state["moderated"],
        still_moderated=state["moderated_now"],
        queue=state["queue"],
        turns_taken=state["turns_taken"],
        max_turns=state["max_turns"],
        failures=state["failures"],
        planned_turns=state["planned_turns"],
        stopped=state["stopped"],
    )
    step = routing.after_pick_and_turn(bool(state["speaker"]), step)
    return {"persona": "advance", "moderator": "moderator", "end": "end"}[step]

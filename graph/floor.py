"""Who speaks next: the one place that answers it, on top of the pure rules in graph.routing.

Addressing, /next, the moderator's question and its fallback, invitations and recruitment, /stop
and the end of a round. The Chair reads and takes what people asked for through storage (a /next
nomination, a /stop request, the channel's moderation settings) and hands back a new Floor; the
round's graph (graph.build) only asks it where to go after each step.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from graph import routing
from graph.deps import EngineDeps
from graph.models.base import UnparsableReply
from graph.models.retry import ainvoke_with_retry
from graph.moderator import CUT_OFF, invitation_reason, moderator_messages, parse_decision, reask_messages, shown_reason
from graph.routing import FINISH, Speaker
from graph.state import Floor, RoundInput
from storage import channels, history
from storage.records import Channel, Line

log = logging.getLogger(__name__)
MAX_KEPT_LINES = 10_000  # lines kept for the moderator's windows: about 20 per channel in use

Step = Literal["advance", "moderator", "end"]


async def present_speakers(deps: EngineDeps, channel_key: str) -> list[Speaker]:
    """The channel's participants, in the order they joined."""
    return [
        Speaker(id=p.id, name=p.display_name, talkativeness=0.0 if quiet else p.talkativeness)
        for persona_id, quiet in await channels.speaking_participants(deps.db, channel_key)
        if (p := deps.personas.get(persona_id)) is not None
    ]


class Chair:
    def __init__(self, deps: EngineDeps) -> None:
        self.deps = deps
        self._lines: dict[int, Line] = {}  # by id: the moderator's window, as read for earlier picks

    def name(self, persona_id: str | None) -> str | None:
        persona = self.deps.personas.get(persona_id or "")
        return persona.display_name if persona else persona_id

    def _label(self, choice: str) -> str:
        """A persona's display name, or FINISH as it is."""
        return self.name(choice) or choice

    def _labels(self, choices: Sequence[str]) -> list[str]:
        return [self._label(c) for c in choices]

    # -- the round's start ----------------------------------------------------------------------

    async def begin(self, round_input: RoundInput) -> Floor:
        """The round's settings, read once, and its first pick: the moderator's or the unmoderated order's."""
        key = round_input.channel_key
        channel = await channels.get_channel(self.deps.db, key)
        if channel and channel.stop_requested:  # a /stop that came between rounds stops nothing
            await channels.take_stop_request(self.deps.db, key)
        moderated = bool(channel and channel.moderated)
        max_turns = (channel.max_turns if channel else None) or self.deps.settings.max_turns
        # A moderated round follows a human line, so nobody has "just spoken" yet; an unmoderated
        # round keeps the channel's last persona from answering itself straight away.
        last = None if moderated else await history.last_persona_speaker(self.deps.db, key)
        floor = Floor(moderated=moderated, moderated_now=moderated, max_turns=max_turns, last_speaker=last)
        if routing.first_pick(moderated=moderated) == "moderator":
            return await self.moderate(round_input, floor, channel)
        return await self.select(round_input, floor)

    async def select(self, round_input: RoundInput, floor: Floor) -> Floor:
        """An unmoderated round: everyone addressed in mention order, else one natural pick; /next first."""
        speakers = await present_speakers(self.deps, round_input.channel_key)
        order = routing.speakers_for_unmoderated_round(
            round_input.text, round_input.mentions, speakers, floor.last_speaker, self.deps.rng
        )
        nominee = await self._nominee(round_input.channel_key)
        order = routing.nominated_first(order, nominee, [s.id for s in speakers])
        if not order:
            return replace(floor, speaker=None, queue=(), planned_turns=0)
        return replace(floor, speaker=order[0], queue=tuple(order[1:]), planned_turns=len(order))

    @staticmethod
    def advance(floor: Floor) -> Floor:
        """An unmoderated round's next speaker from its queue."""
        return replace(floor, speaker=floor.queue[0], queue=floor.queue[1:])

    # -- a moderated round ----------------------------------------------------------------------

    async def moderate(self, round_input: RoundInput, floor: Floor, channel: Channel | None = None) -> Floor:
        """The moderator's next pick; `channel` when it was read just now (at the round's start)."""
        key = round_input.channel_key
        speakers = await present_speakers(self.deps, key)
        if not speakers:
            return replace(floor, speaker=None)
        channel = channel or await channels.get_channel(self.deps.db, key)
        addressed_ids = routing.addressed(round_input.text, round_input.mentions, speakers)
        options = routing.moderator_options(
            speakers,
            addressed_ids,
            had_turn=[*floor.spoken_since_human, *floor.skipped],
            last_speaker=floor.last_speaker,
            turns_taken=floor.turns_taken,
        )
        invitees = self._invitees(channel, speakers)
        options = routing.with_invitees(options, [s.id for s in invitees], len(speakers), self.deps.settings.team_cap)
        nominee = await self._nominee(key, channel)
        if nominee in {s.id for s in speakers}:
            pick, reason = nominee, routing.NOMINATED
        elif options.forced:
            pick, reason = options.forced, options.forced_reason
        else:
            pick, reason = await self._ask_moderator(
                round_input, floor, speakers, addressed_ids, options, channel, invitees
            )
        pick_name = self._label(pick)
        reason = shown_reason(pick_name, reason, self._labels(floor.spoken_since_human))
        decision = f"[moderator] next: {pick_name} ({reason})"
        show = channel.show_reasons if channel and channel.show_reasons is not None else self.deps.settings.show_reasons
        if show:
            await self.deps.port.show_reason(key, decision, round_input.thread)
        else:
            await self.deps.port.trace(key, decision)
        decisions = (*floor.decisions, f"{pick_name} ({reason})")
        if pick == FINISH:
            return replace(floor, speaker=None, decisions=decisions)
        if pick in {s.id for s in invitees}:
            await self._recruit(key, pick, reason, round_input.thread)
        return replace(floor, speaker=pick, planned_turns=floor.max_turns, decisions=decisions)

    async def _nominee(self, key: str, channel: Channel | None = None) -> str | None:
        """The persona named with /next, taken (used up) when there is one."""
        channel = channel or await channels.get_channel(self.deps.db, key)
        return await channels.take_next_speaker(self.deps.db, key) if channel and channel.next_speaker else None

    async def _window(self, key: str, limit: int) -> list[Line]:
        """The channel's newest lines, oldest first: their ids read, and only the lines not read
        for an earlier pick (a stored line never changes)."""
        ids = await history.recent_channel_line_ids(self.deps.db, key, limit=limit)
        for line in await history.lines_by_id(self.deps.db, [i for i in ids if i not in self._lines]):
            self._lines[line.id] = line
        window = [self._lines[line_id] for line_id in reversed(ids)]
        while len(self._lines) > MAX_KEPT_LINES:
            del self._lines[next(iter(self._lines))]
        return window

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
        """The invited persona joins; its notice, like its marker, says why it was invited."""
        persona = self.deps.personas[persona_id]
        why = f"invited by the moderator: {invitation_reason(reason, persona.display_name, persona.expertise)}"
        # Like /invite: the newcomer sees nothing from before it joined.
        await history.set_membership(
            self.deps.db, key, persona_id, active=True, marker_text=f"{persona.display_name} joined ({why})"
        )
        await self.deps.port.notice(key, f"{persona.display_name} joined ({why}).", thread)

    async def _ask_moderator(
        self,
        round_input: RoundInput,
        floor: Floor,
        speakers: list[Speaker],
        addressed_ids: list[str],
        options: routing.ModeratorOptions,
        channel: Channel | None,
        invitees: list[Speaker],
    ) -> tuple[str, str]:
        """The model's pick among the options and its reason; after two invalid answers, a fallback."""
        settings = self.deps.settings
        key = round_input.channel_key
        lines = await self._window(key, settings.moderator_window)
        choice_names = self._labels(options.choices)
        invited = [s for s in invitees if s.id in options.choices]
        messages = moderator_messages(
            lines,
            participant_names=[s.name for s in speakers],
            addressed=self._labels(addressed_ids),
            spoken_since_human=self._labels(floor.spoken_since_human),
            last_speaker=self.name(floor.last_speaker),
            choices=choice_names,
            instructions=(channel.moderator_prompt if channel else "") or settings.moderator_prompt,
            invitations={s.name: self.deps.personas[s.id].expertise for s in invited},
        )
        speakers = [*speakers, *invited]  # an invitation is picked by name like a participant
        model = self.deps.models.moderator_model(choice_names)  # constrained decoding keeps to the choices
        for _ in range(2):  # the first answer, and one more with the error attached
            try:
                reply = await ainvoke_with_retry(
                    model, messages, attempts=settings.model_attempts, backoff_seconds=settings.backoff_seconds
                )
                answer, cut_off = str(reply.text), False
            except UnparsableReply as exc:  # the embedded model's unfinished JSON: asked again like any invalid answer
                answer, cut_off = exc.text, exc.finish_reason == "length"
            except Exception as exc:  # a failing moderator falls back below
                log.warning("moderator model failed in %s: %s", key, type(exc).__name__)
                break
            parsed = CUT_OFF if cut_off else parse_decision(answer)
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

    # -- after each turn ------------------------------------------------------------------------

    async def turn_over(
        self, round_input: RoundInput, floor: Floor, channel: Channel | None, spoke: str | None, passed: bool = False
    ) -> Floor:
        """The floor once the speaker's turn is over (delivered when `spoke`, passed when `passed`, else
        skipped), with a /stop or a /next that came during the turn taken. `channel` is read after
        the turn. A pass is no failure, and the persona has had its turn as one skipped has."""
        key = round_input.channel_key
        after: dict[str, Any] = {
            "turns_taken": floor.turns_taken + 1,
            "failures": floor.failures + (0 if spoke or passed else 1),
            "moderated_now": bool(channel and channel.moderated),
        }
        if channel and channel.stop_requested and await channels.take_stop_request(self.deps.db, key):
            after["stopped"] = True
            await self.deps.port.notice(key, "Round stopped (/stop).", round_input.thread)
        elif channel and channel.next_speaker and not floor.moderated:
            present = await channels.participants(self.deps.db, key)
            after["queue"] = tuple(routing.nominated_first(floor.queue, await self._nominee(key, channel), present))
        if spoke:
            after.update(last_speaker=spoke, spoken_since_human=(*floor.spoken_since_human, spoke))
        elif floor.speaker:
            after["skipped"] = (*floor.skipped, floor.speaker)
        return replace(floor, **after)

    @staticmethod
    def next_step(floor: Floor) -> Step:
        """Where the round goes after a step that picked a speaker and ran its turn (or picked nobody)."""
        step = routing.after_turn(
            moderated=floor.moderated,
            still_moderated=floor.moderated_now,
            queue=floor.queue,
            turns_taken=floor.turns_taken,
            max_turns=floor.max_turns,
            failures=floor.failures,
            planned_turns=floor.planned_turns,
            stopped=floor.stopped,
        )
        return _STEPS[routing.after_pick_and_turn(bool(floor.speaker), step)]


_STEPS: dict[routing.NextStep, Step] = {"persona": "advance", "moderator": "moderator", "end": "end"}

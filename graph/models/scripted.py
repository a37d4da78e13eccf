"""The scripted test double (`provider = "scripted"`): deterministic, offline, and documented as such.

- A persona replies with its catchphrase and, quoted, the first 40 characters of the newest line it
  received from someone else in the channel (not a system line, nor a private note from another persona;
  in a task step or a task's answer, the ask that ends its note), then "is worth a second thought." A reply that would repeat a line of its prompt (graph.review's
  test) takes the first other wording, from ASIDES and CLOSINGS, that repeats none: a double that
  copied itself would only test the review, which never posts a copy.
- The moderator picks the first of its choices who has not spoken since the newest human line;
  when everyone has, FINISH if it is a choice, else the first choice.
- A human line containing `!!act NAME {json}` makes the next persona turn call tool NAME with those
  arguments; `!!fail N` makes the next N model calls raise ScriptedFailure; `!!slow N` makes the
  next model call take N seconds (in a worker thread, as a real model's would); `!!overlap N` makes
  the next N persona calls wait (at most OVERLAP_WAIT seconds, then fail) until all N are under way
  at once: a gate only calls that overlap pass (task steps running side by side).
- The planner answers the `!!plan {json}` of the newest human line it is given (the second one
  when it is asked again after an invalid plan). Without one, each part of that line between
  semicolons becomes a step, depending on the step before it; a step's capability is the first
  capability named in its text, else the next one in turn. Asked to check a plan (graph/planner.py
  RECHECK_CUE), it answers the `!!replan {json}` of the task's request, else the remaining steps
  it was given, unchanged.
- The coordinator calls a human line a task when it contains `!!task`.
- The judge finds every draft "ok", except the first draft it reads after a line holding
  `!!judge VERDICT`, which gets that verdict.
- The summary model keeps the summary so far whole and adds one sentence per person's line it is
  given ("Ana said: ..."), its first 16 words without `!!` directives: no fact is reworded. Asked to
  shorten, it merges repeated sentences (each kept once, where it first came), and graph/memory.py's
  bound cuts the oldest off what is still too long.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graph.memory import LINES_OPENING, MEMORY_OPENING
from graph.models.base import ChatRunnable
from graph.moderator import CAN_ANSWER, read_facts
from graph.planner import RECHECK_CUE
from graph.review import repeats
from graph.routing import EVERYONE_SPOKE, FINISH, HAS_NOT_SPOKEN
from graph.turn_text import split_turn
from personas import Persona

CLOSINGS = (
    "is worth a second thought.",
    "deserves a closer look, and here is my angle on it.",
    "raises a question nobody has asked yet: who is it for?",
    "makes me want numbers before we go further.",
    "could be simpler than it sounds; start small.",
    "reminds me of last quarter, when timing mattered most.",
    "needs one owner and one date, then we move.",
    "sounds fine today, yet tomorrow might change everything.",
)
ASIDES = (  # long enough that two wordings of one reply are no copies of each other
    "",
    "I have been turning this over since the last message came in, and",
    "Speaking only for myself, with no notes and no slides at hand,",
    "Before anyone decides anything today, let me put one thought on the table:",
    "Coming back to it after a night's sleep and a strong cup of tea,",
    "With the calendar as full as it is this month, I would say",
    "Leaving the budget aside for one minute, and only for one minute,",
    "If we were starting again from an empty page tomorrow morning,",
)
QUOTE_CHARS = 40  # short enough that a reply quoting another reply is no copy of it (graph/review.py)
_TASK_NOTE = "[system] Task #"
_JUDGE = re.compile(r"!!judge\s+(\w+)")
_FAIL = re.compile(r"!!fail\s+(\d+)")
_SLOW = re.compile(r"!!slow\s+(\d+(?:\.\d+)?)")
_OVERLAP = re.compile(r"!!overlap\s+(\d+)")
_REPLAN = re.compile(r"!!replan\s+(\{.*?\})(?=\s*(?:!!|$))", re.DOTALL | re.MULTILINE)
_REMAINING = re.compile(r"^\{.*\}$", re.MULTILINE)
OVERLAP_WAIT = 30.0  # seconds a gated call waits for the others before it fails
_ACT = re.compile(r"!!act\s+([A-Za-z_][\w]*)\s+(\{.*\})", re.DOTALL)
_SPEAKER_TAG = re.compile(r"^(?:\[[^\]]+\]|[^:\n]{1,80}:)\s*")
_PLAN = re.compile(r"!!plan\s+(\{.*?\})(?=\s*(?:!!|$))", re.DOTALL)
_DIRECTIVE = re.compile(
    r"!!\w+(?:\s+\d+(?:\.\d+)?|\s+\w+\s+\{.*?\}(?=\s*(?:!!|$))|\s+\{.*?\}(?=\s*(?:!!|$)))?", re.DOTALL
)


class ScriptedFailure(RuntimeError):
    """A model failure requested by `!!fail N`."""


@dataclass
class Directives:
    """`!!` directives seen so far, shared by every scripted model of one bot."""

    seen: set[str] = field(default_factory=set)
    failures_left: int = 0
    slow_seconds: float = 0.0
    actions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    gate: threading.Barrier | None = None  # !!overlap: the calls that wait for each other
    gated_left: int = 0  # calls still to pass the gate
    lock: Any = field(default_factory=threading.Lock)  # models run in worker threads, side by side

    def absorb(self, messages: Sequence[BaseMessage]) -> None:
        """Take the directives of the newest human line, once. A turn finishing after its tool
        results (the last message is a ToolMessage) is not a new turn, so it takes none."""
        with self.lock:
            self._absorb(messages)

    def _absorb(self, messages: Sequence[BaseMessage]) -> None:
        if not messages or messages[-1].type == "tool":
            return
        newest = next((m for m in reversed(messages) if _from_a_human(m)), None)
        if newest is not None and newest.id is not None and newest.id not in self.seen:
            self.seen.add(newest.id)
            text = str(newest.content)
            if fail := _FAIL.search(text):
                self.failures_left += int(fail.group(1))
            if slow := _SLOW.search(text):
                self.slow_seconds = float(slow.group(1))
            if overlap := _OVERLAP.search(text):
                self.gated_left = int(overlap.group(1))
                self.gate = threading.Barrier(self.gated_left, timeout=OVERLAP_WAIT)
            if act := _ACT.search(text):
                try:
                    arguments = json.loads(act.group(2))
                except json.JSONDecodeError:
                    arguments = {"_unparsed": act.group(2)}
                self.actions.append((act.group(1), arguments if isinstance(arguments, dict) else {"value": arguments}))

    def maybe_wait(self) -> None:
        with self.lock:
            seconds, self.slow_seconds = self.slow_seconds, 0.0
        if seconds:
            time.sleep(seconds)  # LangChain runs a sync _generate in a worker thread

    def pass_gate(self) -> None:
        """A gated call waits until every call of the gate is under way (BrokenBarrierError: they were not)."""
        with self.lock:
            gate = self.gate if self.gated_left > 0 else None
            self.gated_left -= 1 if gate else 0
        if gate is not None:
            gate.wait()

    def maybe_fail(self) -> None:
        with self.lock:
            failing = self.failures_left > 0
            self.failures_left -= 1 if failing else 0
        if failing:
            raise ScriptedFailure("scripted failure (!!fail)")


def _from_a_human(message: BaseMessage) -> bool:
    text = str(message.content)
    return message.type == "human" and not text.startswith("[")


def _newest_line_from_someone_else(messages: Sequence[BaseMessage]) -> str:
    """The newest human line, or the ask that ends the newest task step given to the persona (its
    last sentence, such as "Ana: Nova, write the agenda.")."""
    for message in reversed(messages):
        text = str(message.content)
        if message.type != "human":
            continue
        if text.startswith(_TASK_NOTE):  # the ask is the last sentence of its last line
            return text.rstrip().splitlines()[-1].rsplit(". ", 1)[-1]
        if not text.startswith(("[system]", "[note from ")):
            return _SPEAKER_TAG.sub("", text, count=1)
    return ""


def _fresh_wording(opener: str, quote: str, window: Sequence[str]) -> str:
    if not quote:
        return f"{opener} Nothing to answer yet, so hello!"
    wordings = (f'{opener} {aside} "{quote}" {closing}'.replace("  ", " ") for aside in ASIDES for closing in CLOSINGS)
    first = next(wordings)
    if not any(repeats(first, line) for line in window):
        return first
    return next((w for w in wordings if not any(repeats(w, line) for line in window)), first)


class _ScriptedModel(BaseChatModel):
    """Directives first (`!!fail` may raise here), then the subclass's deterministic answer."""

    directives: Directives

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.directives.absorb(messages)
        self.directives.maybe_wait()
        self.directives.maybe_fail()
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        raise NotImplementedError


class ScriptedPersonaModel(_ScriptedModel):
    persona_name: str
    catchphrase: str

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # The turn's question (graph/turn_text.py) is the product's instruction, not a line: the
        # double answers the conversation itself, as it always has.
        messages, _ = split_turn(messages)
        self.directives.absorb(messages)
        self.directives.pass_gate()
        return super()._generate(messages, stop, run_manager, **kwargs)

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        quote = _newest_line_from_someone_else(messages)[:QUOTE_CHARS].replace("\n", " ")
        opener = self.catchphrase or f"{self.persona_name} here."
        text = _fresh_wording(opener, quote, [str(m.content) for m in messages if m.type != "system"])
        tool_calls = []
        if self.directives.actions:
            name, arguments = self.directives.actions.pop(0)
            tool_calls.append(
                {"name": name, "args": arguments, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}
            )
        return AIMessage(content=text, tool_calls=tool_calls)


class ScriptedModeratorModel(_ScriptedModel):
    @property
    def _llm_type(self) -> str:
        return "scripted-moderator"

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        facts = read_facts(messages)
        spoken, invitations = set(facts["spoken_since_newest_human_line"]), set(facts.get("invitations", {}))
        choices = [name for name in facts["choices"] if name not in invitations]  # the double never recruits
        pick = next((name for name in choices if name != FINISH and name not in spoken), None)
        if pick is not None:
            decision = {"next_speaker": pick, "reason": HAS_NOT_SPOKEN}
        elif FINISH in choices:
            decision = {"next_speaker": FINISH, "reason": EVERYONE_SPOKE}
        else:
            decision = {"next_speaker": choices[0], "reason": CAN_ANSWER}
        return AIMessage(content=json.dumps(decision))


def _newest_human_text(messages: Sequence[BaseMessage]) -> str:
    newest = next((m for m in reversed(messages) if m.type == "human" and not m.text.startswith("[")), None)
    return _SPEAKER_TAG.sub("", newest.text, count=1) if newest is not None else ""


class ScriptedPlannerModel(_ScriptedModel):
    capabilities: list[str]

    @property
    def _llm_type(self) -> str:
        return "scripted-planner"

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        if messages[-1].text.startswith(RECHECK_CUE):
            given = "\n".join(m.text for m in messages)
            replanned = _REPLAN.search(given)
            remaining = _REMAINING.search(messages[-1].text)
            return AIMessage(content=replanned.group(1) if replanned else remaining.group(0) if remaining else "{}")
        request = _newest_human_text(messages)
        scripted = _PLAN.findall(request)
        if scripted:
            asked_before = sum(1 for m in messages if m.type == "ai")
            return AIMessage(content=scripted[min(asked_before, len(scripted) - 1)])
        parts = [p.strip(" .") for p in _DIRECTIVE.sub("", request).split(";")]
        parts = [p for p in parts if p] or ["Answer the request"]
        steps = []
        for index, part in enumerate(parts):
            named = next((c for c in self.capabilities if c in part.casefold()), None)
            capability = named or (self.capabilities[index % len(self.capabilities)] if self.capabilities else "")
            steps.append(
                {
                    "id": index + 1,
                    "title": part[:60],
                    "instruction": part,
                    "capability": capability,
                    "depends_on": [index] if index else [],
                }
            )
        return AIMessage(content=json.dumps({"title": parts[0][:60], "steps": steps}))


class ScriptedCoordinatorModel(_ScriptedModel):
    @property
    def _llm_type(self) -> str:
        return "scripted-coordinator"

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        return AIMessage(content=json.dumps({"task": "!!task" in _newest_human_text(messages)}))


class ScriptedJudgeModel(_ScriptedModel):
    @property
    def _llm_type(self) -> str:
        return "scripted-judge"

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        asked = _JUDGE.search(messages[-1].text)
        if asked and asked.group(0) not in self.directives.seen:
            self.directives.seen.add(asked.group(0))
            return AIMessage(content=json.dumps({"verdict": asked.group(1), "reason": "the script says so"}))
        return AIMessage(content=json.dumps({"verdict": "ok", "reason": "fine"}))


class ScriptedSummaryModel(_ScriptedModel):
    @property
    def _llm_type(self) -> str:
        return "scripted-summary"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # In the background: it takes no `!!fail` or `!!slow` meant for a persona's turn.
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        asked = messages[-1].text
        if asked.startswith(MEMORY_OPENING):  # repeats merged; the rest is left to the keeper's bound
            kept: list[str] = []
            for sentence in re.split(r"(?<=[.!?]) (?=\S+ said: )", asked.removeprefix(MEMORY_OPENING).strip()):
                if not any(repeats(sentence, earlier) for earlier in kept):
                    kept.append(sentence)
            return AIMessage(content=json.dumps({"summary": " ".join(kept)}))
        lines = asked.partition(f"{LINES_OPENING}\n")[2]
        sentences: list[str] = []
        for line in lines.splitlines():
            item = _item(line)
            if item is None or item.get("kind") != "person":
                continue
            words = _DIRECTIVE.sub("", str(item.get("text", ""))).split()[:16]
            if words:
                sentences.append(f"{item.get('name')} said: {' '.join(words).rstrip('.!?')}.")
        return AIMessage(content=json.dumps({"facts": sentences}))


def _item(line: str) -> dict[str, Any] | None:
    """One line of the fold prompt: a JSON object (graph/memory.as_item), or None."""
    try:
        item = json.loads(line)
    except ValueError:
        return None
    return item if isinstance(item, dict) else None


class ScriptedModels:
    description = "scripted test double (deterministic, offline; not a language model)"

    def __init__(self) -> None:
        self.directives = Directives()

    def persona_model(self, persona: Persona, other_names: Sequence[str], *, addressed: bool = False) -> ChatRunnable:
        return ScriptedPersonaModel(
            persona_name=persona.display_name, catchphrase=persona.catchphrase, directives=self.directives
        )

    def moderator_model(self, choices: Sequence[str]) -> ChatRunnable:
        return ScriptedModeratorModel(directives=self.directives)

    def planner_model(self, capabilities: Sequence[str], max_steps: int) -> ChatRunnable:
        return ScriptedPlannerModel(capabilities=list(capabilities), directives=self.directives)

    def coordinator_model(self, schema: dict[str, Any]) -> ChatRunnable:
        return ScriptedCoordinatorModel(directives=self.directives)

    def judge_model(self, schema: dict[str, Any]) -> ChatRunnable:
        return ScriptedJudgeModel(directives=self.directives)

    def summary_model(self, schema: dict[str, Any], max_tokens: int) -> ChatRunnable:
        return ScriptedSummaryModel(directives=self.directives)

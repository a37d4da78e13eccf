"""A task's whole results and its one answer.

Each step's result is kept whole as the task's artifact (storage/task_artifacts.py): its persona's
whole reply and what its actions did, or what a person said they did, at most [tasks]
max_artifact_chars with a note when cut. The steps that depend on it get it whole in their private
note (the plan message keeps its short summaries), as long as the prompt's token budget allows:
the results one note carries share half of [history] token_budget, and each one over its share is
cut there with a note that says so, so the note, the system text and the conversation all fit.

When the task ends with some step completed (done, failed, or stopped by /task stop; not when it is
cancelled), an integration turn writes its answer: a persona turn like a step's (the same review,
posted in the channel as the task's last message; it may give a step's result word for word, which
the review would take for a repeat elsewhere), after a private note with the request, what
was done (each completed step's result, within the same share), the result itself and what failed. The integrator
is `[tasks] integrator` when that persona is in the channel, else the persona who completed the
most steps (on a tie, the one whose completed step comes later in the plan), else the first
persona present. The note and the turn's start are stored together as step ANSWER_STEP, so a crash
during the turn takes the answer already committed instead of posting another.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from graph.deps import EngineDeps
from graph.nodes import RoundNodes
from graph.state import Floor, RoundInput
from graph.tasks import Ended, Plan, Step
from storage import channels, task_artifacts, tasks
from storage.task_artifacts import ANSWER_STEP, Artifact

ANSWER_PLANNED_TURNS = 2  # one turn; a failed one is the task's to report, not a stopped round's
RESULTS_SHARE = 0.5  # of a prompt's token budget, for the results its note carries
CHARS_PER_TOKEN = 4  # graph/prompt.estimate_tokens' rate
MIN_RESULT_CHARS = 200  # a result cut shorter says too little to build on


def bounded(text: str, limit: int) -> str:
    """A result kept whole up to `limit` characters; longer, cut there with a note that says so."""
    text = text.strip()
    if len(text) <= limit:
        return text
    note = f" … [cut at {limit} characters]"  # the model, and who reads the note, know it is not whole
    return text[: max(limit - len(note), 0)].rstrip() + note


def result_limit(token_budget: int, results: int) -> int:
    """The most characters of each of `results` results in one prompt's note: together they take at
    most RESULTS_SHARE of the prompt's token budget (at graph/prompt.estimate_tokens' four characters
    a token), so the system text, the note's request and ask, and the conversation keep the rest; never
    less than MIN_RESULT_CHARS."""
    return max(int(token_budget * RESULTS_SHARE) * CHARS_PER_TOKEN // max(results, 1), MIN_RESULT_CHARS)


def with_outcomes(result: str, ended: Sequence[Ended]) -> str:
    """A step's result followed by what its actions did, one line each (once: a settle run again
    after a stop finds them there already)."""
    outcomes = "\n".join(f"({e.outcome})" for e in ended)
    return result if result.endswith(outcomes) else f"{result}\n{outcomes}".strip()


def _who(step: Step, names: Mapping[str, str]) -> str:
    return step.done_by or names.get(step.assignee or "", step.assignee or "nobody")


def _result(step: Step, artifacts: Mapping[int, Artifact], limit: int | None = None) -> str:
    found = artifacts.get(step.id)
    text = found.text if found is not None else step.result_summary  # a task begun before artifacts were kept
    return text if limit is None else bounded(text, limit)


def step_inputs(
    plan: Plan, step: Step, artifacts: Mapping[int, Artifact], names: Mapping[str, str], token_budget: int | None = None
) -> list[str]:
    """What the steps this step depends on left it: each completed one's whole result (within a
    prompt of `token_budget` tokens, each cut to its share with a note that says so), and why a
    skipped one has none."""
    by_id = {s.id: s for s in plan.steps}
    needed_steps = [by_id[d] for d in step.depends_on if d in by_id]
    limit = _limit(token_budget, sum(1 for s in needed_steps if s.status == "completed"))
    inputs = []
    for needed in needed_steps:
        if needed.status == "completed":
            result = _result(needed, artifacts, limit).rstrip(".")
            inputs.append(f"step {needed.id} ({_who(needed, names)}): {result}")
        elif needed.status == "skipped":
            inputs.append(f"step {needed.id} was {needed.result_summary.rstrip('.')}")
    return inputs


def _limit(token_budget: int | None, results: int) -> int | None:
    return None if token_budget is None else result_limit(token_budget, results)


def answer_due(plan: Plan | None, cancelled: bool) -> bool:
    """Whether the task ending now gets an answer: it was not cancelled and some step completed."""
    return plan is not None and not cancelled and any(s.status == "completed" for s in plan.steps)


def integrator(plan: Plan, present: Sequence[str], configured: str = "") -> str | None:
    """Who writes the task's answer, of the personas present (ids, in channel order): the configured
    integrator; else who completed the most steps (a tie goes to the later step's); else the first."""
    if configured and configured in present:
        return configured
    doers = [s.assignee for s in plan.steps if s.status == "completed" and not s.done_by and s.assignee in present]
    if doers:
        counts = Counter(doers)
        return next(d for d in reversed(doers) if d is not None and counts[d] == max(counts.values()))
    return present[0] if present else None


def answer_note(
    task_id: int,
    request: str,
    author_name: str,
    plan: Plan,
    ending: str,
    artifacts: Mapping[int, Artifact],
    names: Mapping[str, str],
    integrator_id: str,
    token_budget: int | None = None,
) -> tuple[str, str]:
    """The integrator's private note (the request, every completed step's whole result, within a
    prompt of `token_budget` tokens each cut to its share with a note that says so, what did not get
    done, then the ask), and the ask alone: what its reply answers."""
    lines = [f"Task #{task_id} ({plan.title}) has ended: {ending}", f"The request ({author_name}): {request}"]
    done = [s for s in plan.steps if s.status == "completed"]
    limit = _limit(token_budget, len(done))
    if done:
        lines.append("What was done:")
        lines += [f"- step {s.id}, {s.title} ({_who(s, names)}): {_result(s, artifacts, limit)}" for s in done]
    missing = [s for s in plan.steps if s.status != "completed"]
    if missing:
        lines.append("What did not get done:")
        for step in missing:
            why = f": {step.result_summary}" if step.result_summary else ""
            lines.append(f"- step {step.id}, {step.title} ({step.status}{why})")
    # Asked last, as the requester: a small model answers a request far more often than it follows a note.
    ask = (
        f"{names.get(integrator_id, 'you')}, give me the task's answer: the result itself, "
        "what was done and anything that failed."
    )
    return "\n".join([*lines, f"{author_name}: {ask}"]), ask


class TaskAnswer:
    """The integration turn at a task's end, and the answer it stores."""

    def __init__(self, deps: EngineDeps, nodes: RoundNodes) -> None:
        self.deps = deps
        self.nodes = nodes

    async def keep(self, task_id: int, step_id: int, author_id: str, result: str) -> None:
        """A step's whole result, as the task's artifact (bounded by [tasks] max_artifact_chars)."""
        text = bounded(result, self.deps.settings.max_artifact_chars)
        await task_artifacts.put(self.deps.db, task_id, step_id, author_id, text)

    async def conclude(
        self, state: Mapping[str, Any], plan: Plan | None, status: str, note: str, show: Callable[[], Awaitable[None]]
    ) -> list[dict[str, Any]]:
        """The task's end in the channel: how it ended (a notice), its answer when one is due, and
        `show` (which stores the task's end and shows its plan) after the answer, so a task cut short
        before its answer is stored runs its end again. A completed task's answer is its last word;
        without one, the notice says how it ended. The approval batches the answer's turn raised."""
        key, thread = state["channel_key"], state["thread"]
        told = f"Task #{state['task_id']}: {note}"
        due = answer_due(plan, bool(state.get("cancelled_by")))
        if status != "completed" or not due:
            await self.deps.port.notice(key, told, thread)
        answer: Artifact | None = None
        batches: list[dict[str, Any]] = []
        if due and plan is not None:
            answer, batches = await self.write(
                state["task_id"], key, thread, state["request"], state["author_name"], plan, note
            )
        await show()
        if status == "completed" and due and answer is None:
            await self.deps.port.notice(key, told, thread)
        return batches

    async def write(
        self, task_id: int, key: str, thread: str | None, request: str, author_name: str, plan: Plan, ending: str
    ) -> tuple[Artifact | None, list[dict[str, Any]]]:
        """The task's answer (None: nobody could write one) and the approval batches its turn raised."""
        db = self.deps.db
        artifacts = await task_artifacts.of_task(db, task_id)
        if ANSWER_STEP in artifacts:
            return artifacts[ANSWER_STEP], []  # written before a stop cut the task's end short
        channel = await channels.get_channel(db, key)
        if channel is not None and channel.paused:
            return None, []  # a paused channel gets no persona replies
        present = [p for p in await channels.participants(db, key) if p in self.deps.personas]
        who = integrator(plan, present, self.deps.settings.task_integrator)
        if who is None:
            return None, []
        names = {p.id: p.display_name for p in self.deps.personas.values()}
        budget = self.deps.settings.token_budget
        note, ask = answer_note(task_id, request, author_name, plan, ending, artifacts, names, who, budget)
        # Recorded like a step (one attempt, no step of the plan: a restart takes it by its note).
        line, begun_before = await tasks.begin_step(db, task_id, ANSWER_STEP, plan.revision, 1, who, note, "{}")
        reply = await tasks.reply_after(db, key, who, line) if begun_before else None
        batches: list[dict[str, Any]] = []
        if reply is None:
            results = tuple(_result(step, artifacts) for step in plan.steps if step.status == "completed")
            asking = RoundInput(key, ask, author_name, (who,), thread, gathers=results)
            floor = Floor(speaker=who, planned_turns=ANSWER_PLANNED_TURNS)
            _, turn = await self.nodes.turn(asking, floor, of_round=False)
            batches = [turn.batch] if turn.batch else []
            reply = await tasks.reply_after(db, key, who, line) if turn.delivered else None
        if reply is None:
            return None, batches
        await task_artifacts.put(db, task_id, ANSWER_STEP, who, reply)
        return Artifact(ANSWER_STEP, who, reply), batches

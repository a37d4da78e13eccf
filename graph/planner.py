"""The planner and the coordinator on a model: their prompts, JSON schemas and the one re-ask.

The planner answers a plan as JSON under `plan_schema` (Gemini and OpenAI-compatible models get the
schema as structured output; the embedded model decodes under it). An invalid plan goes back once
with what is wrong; a second invalid plan ends the task. The coordinator says whether a human line
asks the team for a task, as `{"task": true|false}`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from graph.models.base import ChatRunnable, UnparsableReply
from graph.models.retry import ainvoke_with_retry
from graph.moderator import DECISION_CUE
from graph.prompt import speaker_name
from graph.tasks import PLANNED_FIELDS, TASK_KINDS, Plan, parse_plan

log = logging.getLogger(__name__)

PLANNER_ATTEMPTS = 2  # the first plan, and one more with the error attached
CUT_OFF = "it stopped before its end, at the length limit; write fewer steps, in fewer words"
NO_KIND = "other"  # a task that is neither research, writing nor actions: the default failure threshold

Check = Callable[[Plan], tuple[Plan, str | None]]
"""A parsed plan -> (the plan to run, what is wrong with it or None)."""


def plan_schema(capabilities: Sequence[str], max_steps: int) -> dict[str, Any]:
    """A plan's JSON schema: every property required and nothing else allowed (OpenAI strict mode)."""
    step = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "title": {"type": "string"},
            "instruction": {"type": "string"},
            "capability": {"type": "string", "enum": list(capabilities)},
            "depends_on": {"type": "array", "items": {"type": "integer"}},
            "optional": {"type": "boolean"},
        },
        "required": list(PLANNED_FIELDS),
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "kind": {"type": "string", "enum": [*TASK_KINDS, NO_KIND]},
            "steps": {"type": "array", "items": step, "minItems": 1, "maxItems": max_steps},
        },
        "required": ["title", "kind", "steps"],
        "additionalProperties": False,
    }


def numbered_plan_schema(capabilities: Sequence[str], max_steps: int) -> dict[str, Any]:
    """plan_schema with each step's place fixed: step n has id n and depends only on steps before it.

    For the embedded model's constrained decoding, which then cannot write an unknown dependency or
    a cycle. (prefixItems is beyond what Gemini and OpenAI strict mode take, so they get plan_schema.)
    """
    schema = plan_schema(capabilities, max_steps)
    step = schema["properties"]["steps"].pop("items")
    places = []
    for number in range(1, max_steps + 1):
        earlier = list(range(1, number))
        depends_on = (
            {"type": "array", "items": {"enum": earlier}, "maxItems": len(earlier)}
            if earlier
            else {
                "type": "array",
                "maxItems": 0,
            }
        )
        properties = {**step["properties"], "id": {"const": number}, "depends_on": depends_on}
        places.append({**step, "properties": properties})
    # No `items: false` after them: maxItems (max_steps) already ends the list with the last place,
    # and llama.cpp's chat-template parser (Qwen2.5's) rejects a boolean schema there.
    schema["properties"]["steps"].update(prefixItems=places)
    return schema


# The embedded model fills every place its schema offers: Qwen2.5-Coder-1.5B planned 8 steps for
# each of the ten bench requests at [tasks] max_steps = 8, most of them one long chain.
EMBEDDED_MAX_STEPS = 4


def embedded_plan_schema(capabilities: Sequence[str], max_steps: int) -> dict[str, Any]:
    """numbered_plan_schema with at most EMBEDDED_MAX_STEPS places (fewer when max_steps is lower)."""
    return numbered_plan_schema(capabilities, min(max_steps, EMBEDDED_MAX_STEPS))


COORDINATOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"task": {"type": "boolean"}},
    "required": ["task"],
    "additionalProperties": False,
}


# Worked plans whose steps take their words from the request, in four shapes (one step, a chain,
# steps that run side by side and one that joins them), so a small model learns to split the
# request it is given rather than to copy one example, and to leave steps that need nothing of each
# other unchained. {0} and {1} are two capabilities of the channel (two personas' where there are two).
_EXAMPLES: tuple[tuple[str, str, list[tuple[str, str, tuple[int, ...]]]], ...] = (
    (
        "Mia: Find a caterer for Friday and write the menu card",
        "writing",
        [("Find a caterer for Friday", "{0}", ()), ("Write the menu card", "{1}", (1,))],
    ),
    ("Leo: Summarise the customer survey", "research", [("Summarise the customer survey", "{0}", ())]),
    (
        "Mia: Draft the party invitation and find a venue, then put both in one message",
        "writing",
        [
            ("Draft the party invitation", "{1}", ()),
            ("Find a venue", "{0}", ()),
            ("Put the invitation and the venue in one message", "{1}", (1, 2)),
        ],
    ),
    (
        "Mia: Compare two bike routes, pick the safer one and write it up for the newsletter",
        "research",
        [
            ("Compare two bike routes", "{0}", ()),
            ("Pick the safer route", "{0}", (1,)),
            ("Describe it for the newsletter", "{1}", (2,)),
        ],
    ),
)


def _examples(capabilities: Mapping[str, Sequence[str]]) -> str:
    names = list(capabilities)
    first = names[0]
    second = next((c for c in names if set(capabilities[c]) != set(capabilities[first])), names[-1])
    shown = []
    for request, kind, steps in _EXAMPLES:
        plan = {
            "title": request.split(": ", 1)[1],
            "kind": kind,
            "steps": [
                {
                    "id": number,
                    "title": text,
                    "instruction": text,
                    "capability": capability.format(first, second),
                    "depends_on": list(after),
                    "optional": False,
                }
                for number, (text, capability, after) in enumerate(steps, start=1)
            ],
        }
        shown.append(f"{request}\n{DECISION_CUE} {json.dumps(plan, separators=(',', ':'))}")
    return "\n\n".join(shown)


def planner_system(capabilities: Mapping[str, Sequence[str]], max_steps: int) -> str:
    who = "\n".join(f"- {name}: {', '.join(people)}" for name, people in capabilities.items())
    return (
        "You plan work for a team of personas in a group chat. Split the request into as few small "
        f"steps as it needs (at most {max_steps}; most requests need 2 to 4); each step is one persona's "
        "single message. Each step needs one "
        f"capability from this list (the personas who have it are named):\n{who}\n"
        "Reply with JSON only: a short title, the task's kind (research: finding things out; writing: "
        f"producing a text; actions: changing things with tools; {NO_KIND}: anything else), and the steps, "
        "each with an id (1, 2, ...), a title, an instruction for the persona, its capability, "
        "depends_on (the ids of steps that must finish first; a step may use their results; steps that "
        "need nothing of each other run at the same time) and optional (true only for a step the task "
        "can do without: if people reject its action, it is skipped; otherwise the task fails)."
        "\n\nExamples:\n" + _examples(capabilities)
    )


def planner_messages(
    request: str, author: str, capabilities: Mapping[str, Sequence[str]], max_steps: int
) -> list[BaseMessage]:
    return [
        SystemMessage(content=planner_system(capabilities, max_steps)),
        HumanMessage(content=f"{speaker_name(author)}: {request}"),  # a name never reads as a tag
    ]


def replan_messages(
    plan_text: str,
    request: str,
    instruction: str,
    author: str,
    capabilities: Mapping[str, Sequence[str]],
    max_steps: int,
    completed_ids: Sequence[int],
) -> list[BaseMessage]:
    """The task so far, then the new instruction last: plan only what is left to do."""
    kept = ", ".join(str(i) for i in completed_ids) or "none"
    situation = (
        f"[system] The task was: {request}\nThe plan so far:\n{plan_text}\n"
        f"Completed steps (ids {kept}) stay as they are. Plan only the remaining work, in new steps; a "
        "step may depend on a completed step by its id."
    )
    return [
        SystemMessage(content=planner_system(capabilities, max_steps)),
        HumanMessage(content=situation),
        HumanMessage(content=f"{speaker_name(author)}: {instruction}"),
    ]


RECHECK_CUE = "[system] Check the plan:"


def recheck_messages(
    plan_text: str,
    request: str,
    why: str,
    plan: Plan,
    capabilities: Mapping[str, Sequence[str]],
    max_steps: int,
    completed_ids: Sequence[int],
) -> list[BaseMessage]:
    """The task so far, then the supervisor's question: does the rest of the plan still fit, now
    that `why`? The remaining steps go with it as JSON, to be answered unchanged when they fit."""
    kept = ", ".join(str(i) for i in completed_ids) or "none"
    situation = (
        f"[system] The task was: {request}\nThe plan so far:\n{plan_text}\n"
        f"Completed steps (ids {kept}) stay as they are. Plan only the remaining work, in new steps; a "
        "step may depend on a completed step by its id."
    )
    remaining = {
        "title": plan.title,
        "kind": plan.kind or NO_KIND,
        "steps": [s.model_dump(include=set(PLANNED_FIELDS)) for s in plan.steps if s.status != "completed"],
    }
    question = (
        f"{RECHECK_CUE} {why}. Does the rest of the plan still fit? If it does, answer the remaining "
        f"steps unchanged:\n{json.dumps(remaining, separators=(',', ':'))}\nIf it does not, answer new "
        "steps for the remaining work (a failed step may be done another way, or by another capability)."
    )
    return [
        SystemMessage(content=planner_system(capabilities, max_steps)),
        HumanMessage(content=situation),
        HumanMessage(content=question),
    ]


def reask(messages: Sequence[BaseMessage], answer: str, problem: str) -> list[BaseMessage]:
    return [
        *messages,
        AIMessage(content=answer),
        HumanMessage(content=f"[system] That plan is invalid: {problem}. Answer again with a corrected plan."),
    ]


async def ask_for_plan(
    model: ChatRunnable, messages: list[BaseMessage], check: Check, *, attempts: int, backoff_seconds: float
) -> Plan | str:
    """The accepted plan, or why there is none (one line): invalid twice, or the model failed."""
    problem = ""
    for _ in range(PLANNER_ATTEMPTS):
        try:
            reply = await ainvoke_with_retry(model, messages, attempts=attempts, backoff_seconds=backoff_seconds)
            answer: str = reply.text
            cut_off = False
        except UnparsableReply as exc:  # the embedded model's unfinished JSON: asked again like any invalid plan
            answer, cut_off = exc.text, exc.finish_reason == "length"
        except Exception as exc:
            log.warning("planner model failed: %s", type(exc).__name__)
            return "the planner's model failed"
        parsed = CUT_OFF if cut_off else parse_plan(answer)
        if isinstance(parsed, Plan):
            parsed, found = check(parsed)
            if found is None:
                return parsed
            problem = found
        else:
            problem = parsed
        messages = reask(messages, answer, problem)
    return f"the plan was invalid twice ({problem})"


COORDINATOR_SYSTEM = (
    "You sort the messages of a group chat where people talk with AI personas. A message is a task "
    "when it asks the team to produce or do something that takes several steps (research, write, "
    "review, design, plan). Anything else is chat: questions, opinions, greetings, small requests "
    'for one answer. Reply with JSON only: {"task": true} or {"task": false}.\n\nExamples:\n'
    f'Leo: Research three venues, draft an invitation and review it before Friday\n{DECISION_CUE} {{"task":true}}\n'
    f'Leo: How do you all feel about the new colours?\n{DECISION_CUE} {{"task":false}}\n'
    f'Mia: Write a launch announcement and have someone check it for risks\n{DECISION_CUE} {{"task":true}}\n'
    f'Mia: Good morning everyone!\n{DECISION_CUE} {{"task":false}}'
)


def coordinator_messages(text: str, author: str) -> list[BaseMessage]:
    return [SystemMessage(content=COORDINATOR_SYSTEM), HumanMessage(content=f"{author}: {' '.join(text.split())}")]


def is_task_reply(text: str) -> bool:
    """The coordinator's verdict; anything but a clear {"task": true} is chat."""
    start, end = text.find("{"), text.rfind("}")
    try:
        verdict = json.loads(text[start : end + 1]) if 0 <= start < end else None
    except ValueError:
        return False
    return isinstance(verdict, dict) and verdict.get("task") is True


async def is_task(model: ChatRunnable, text: str, author: str, *, attempts: int, backoff_seconds: float) -> bool:
    """Whether the coordinator reads the line as a task; a failing model means chat."""
    try:
        reply = await ainvoke_with_retry(
            model, coordinator_messages(text, author), attempts=attempts, backoff_seconds=backoff_seconds
        )
    except Exception as exc:
        log.warning("coordinator model failed: %s", type(exc).__name__)
        return False
    return is_task_reply(reply.text)

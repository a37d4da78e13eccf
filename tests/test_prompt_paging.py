"""The persona prompt is read in pages until the token budget is full: it must be exactly the prompt
built from all of the persona's lines, at any history length, before and after a restart."""

import re

import pytest

from graph.prompt import MEMORY_MESSAGE_ID, assemble_prompt, max_lines_within
from graph.turn_text import any_question, question_tokens_at_most
from storage import channels, history
from storage.records import LineKind, ToolCall

KEY = "console:paged"
PERSONAS = ("nova", "sage", "rex")


@pytest.fixture
def storage_url(any_backend: str) -> str:
    return any_backend


async def fill(app, count: int) -> None:
    """`count` lines of uneven length from a human and the personas, with a tool call and its result."""
    db = app.db
    names = {"nova": "Nova", "sage": "Sage", "rex": "Rex"}
    for number in range(count):
        text = f"line {number} " + "word " * (number * 7 % 53)
        if number % 4 == 0:
            await history.append_line(db, KEY, LineKind.HUMAN, "u1", "Ana", text)
        elif number % 97 == 5:
            call = ToolCall(f"call-{number}", "web_search", {"query": "launch"})
            await history.append_persona_turn(db, KEY, "nova", "Nova", text, [call])
            await history.append_tool_result(db, KEY, "nova", call, "results: " + "r " * 40)
        else:
            persona = PERSONAS[number % 3]
            await history.append_line(db, KEY, LineKind.PERSONA, persona, names[persona], text)


def without_clock(prompt: list) -> list:
    """The prompt with its system message's clock ("It is Friday 27 November 2026, 12:59 (UTC).") taken
    out: the minute may turn between two reads, and paging is about the lines, not the time."""
    clock = re.compile(r"It is [^\n]*\(\w+\)\.")
    return [prompt[0].model_copy(update={"content": clock.sub("", str(prompt[0].content))}), *prompt[1:]]


def memory_of(prompt: list) -> str:
    """The prompt's memory block (the persona's summary), or "" when it has none."""
    return str(prompt[1].content) if len(prompt) > 1 and prompt[1].id == MEMORY_MESSAGE_ID else ""


async def reference(app, persona_id: str, prompt: list) -> list:
    """The prompt from every line the persona ever received, without paging, beside the same
    system message and memory block."""
    everything = await history.recent_lines_for(app.db, KEY, persona_id, limit=10**9)
    budget = app.config.settings.history.token_budget
    return assemble_prompt(
        str(prompt[0].content), everything, persona_id, budget, memory_of(prompt), question_room(app, persona_id)
    )


def question_room(app, persona_id: str) -> int:
    """What a prompt leaves of its budget for the turn's question that follows it (graph/turn_text.py)."""
    persona = app.personas[persona_id]
    return question_tokens_at_most(any_question(persona.display_name, persona.stance))


async def settled(app) -> None:
    """Until the summary fold that a long history starts has finished. Opening the app starts one
    for every channel (bot/recovery.py), so it runs after a restart as well: a prompt read while it
    runs may hold the summary before the fold or after it."""
    app.engine.memory.after_round(KEY)
    await app.service.wait_idle(KEY)


@pytest.mark.parametrize(("count", "budget"), [(0, 3000), (3, 3000), (90, 3000), (700, 3000), (1300, 200)])
async def test_paged_prompt_is_the_whole_history_prompt_before_and_after_a_restart(open_test_app, count, budget):
    sections = {"history": {"token_budget": budget}}
    before: dict[str, list] = {}
    async with open_test_app(sections) as app:
        await channels.ensure_channel(app.db, KEY, participants=list(PERSONAS), moderated=False)
        await fill(app, count)
        await settled(app)
        for persona_id in PERSONAS:
            first = await app.engine.prompt_for(KEY, persona_id)
            again = await app.engine.prompt_for(KEY, persona_id)  # a second read starts from a page-size guess
            assert without_clock(again) == without_clock(first)
            assert first == await reference(app, persona_id, first)
            old_way = await history.recent_lines_for(app.db, KEY, persona_id, limit=max_lines_within(budget))
            room = question_room(app, persona_id)
            assert first == assemble_prompt(str(first[0].content), old_way, persona_id, budget, memory_of(first), room)
            before[persona_id] = first
        if count > 100:
            assert len(before["nova"]) < count  # the budget cuts the history
            assert all(memory_of(prompt) for prompt in before.values())  # and what left it is summarised
    async with open_test_app(sections) as app:  # a restart: nothing carried over in memory
        await settled(app)
        for persona_id in PERSONAS:
            after = await app.engine.prompt_for(KEY, persona_id)
            assert without_clock(after) == without_clock(before[persona_id])
            assert after == await reference(app, persona_id, after)

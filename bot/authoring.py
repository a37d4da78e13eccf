"""The persona authoring loop: `roundtable persona check FILE...` and `roundtable persona try ID "a line"`.

Neither opens the app's database: `check` reads only the files it is given, and `try` builds the
prompt a persona would receive in a new channel (its first line being the author's) and asks the
configured model for one reply, storing nothing.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from langchain_core.messages import BaseMessage

from bot.app import load_checked_personas, provider_config
from bot.config import Config
from bot.console import console_key
from graph.actions import ACTIONS, tool_calls_of
from graph.models.factory import build_models
from graph.models.retry import ainvoke_with_retry
from graph.policy import is_sensitive
from graph.prompt import assemble_prompt, scene_now, system_text
from graph.routing import Speaker, addressed
from personas import (
    Persona,
    PersonaError,
    check_persona_file,
    check_persona_files,
    first_problem,
    persona_files,
)
from personas.loader import KnownTools
from storage.records import Line, LineKind

EXIT_PROBLEMS = 2


def check_files(paths: Sequence[Path], known_tools: KnownTools | None = None) -> int:
    """Each problem as one line `FILE: field: what is wrong`; a directory stands for its *.toml files.
    `known_tools`: the configured MCP servers, and the tools each listed when the bot last started it."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = persona_files(path)
            if not found:
                print(f"{path}: no persona files (*.toml)")
                return EXIT_PROBLEMS
            files += found
        else:
            files.append(path)
    checked = check_persona_files(files, known_actions=ACTIONS, known_tools=known_tools)
    for one in checked:
        if one.persona is not None and not one.problems:
            print(f"{one.path}: ok ({one.persona.id}, {one.persona.display_name})")
        for line in [*one.lines(), *one.warning_lines()]:
            print(line)
    return EXIT_PROBLEMS if any(one.problems for one in checked) else 0


def print_messages(messages: Sequence[BaseMessage]) -> None:
    """As `roundtable prompt` prints them: role, then content."""
    for message in messages:
        print(f"--- {message.type} ---\n{message.content}")


def persona_to_try(reference: str, personas: Mapping[str, Persona]) -> Persona:
    """A persona id from the configured personas, or a TOML file (one not added yet, say)."""
    if reference in personas:
        return personas[reference]
    path = Path(reference)
    if path.suffix == ".toml" or path.is_file():
        checked = check_persona_file(path, known_actions=ACTIONS)
        if checked.persona is None:
            raise first_problem(checked.lines(), path)
        return checked.persona
    raise PersonaError(f"no persona {reference!r}; known: {', '.join(personas)} (or give a persona file)")


def first_prompt(config: Config, persona: Persona, others: Sequence[Persona], text: str) -> list[BaseMessage]:
    """What `persona` receives in a new channel with `others` whose first line is `text` from the console user."""
    user = config.settings.bot.console_user
    needs_approval = [a for a in persona.actions if is_sensitive(a, config.settings.approvals.sensitive)]
    now = datetime.now(ZoneInfo(config.settings.bot.timezone))
    system = system_text(persona, [p.display_name for p in others], scene_now("", now), needs_approval)
    line = Line(0, console_key("try"), LineKind.HUMAN, user, user, text, time.time())
    return assemble_prompt(system, [line], persona.id, config.settings.history.token_budget)


async def try_persona(config: Config, reference: str, text: str) -> int:
    """Print the prompt, then one reply from the configured model. Nothing is stored, no channel made."""
    personas = load_checked_personas(config)
    persona = persona_to_try(reference, personas)
    others = [personas[i] for i in config.settings.bot.participants if i != persona.id]
    messages = first_prompt(config, persona, others, text)
    print_messages(messages)
    sys.stdout.flush()  # the prompt shows while a slow model thinks

    speakers = [Speaker(p.id, p.display_name, p.talkativeness) for p in (persona, *others)]
    user = config.settings.bot.console_user
    models = build_models(provider_config(config), os.environ)
    model = models.persona_model(
        persona, [p.display_name for p in others] + [user], addressed=persona.id in addressed(text, [], speakers)
    )
    llm = config.settings.llm
    try:
        reply = await ainvoke_with_retry(
            model, messages, attempts=llm.max_attempts, backoff_seconds=llm.backoff_seconds
        )
    except Exception as exc:  # any provider's failure: one line, as the bot would log it
        print(f"error: {persona.display_name}'s model failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"--- reply from {persona.display_name}; model: {models.description} ---\n{reply.text}")
    for call in tool_calls_of(reply):
        print(f"--- action, not run: {call['name']} ---\n{json.dumps(call['args'], ensure_ascii=False)}")
    return 0

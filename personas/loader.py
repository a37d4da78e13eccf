"""Load and validate persona TOML files. Personas are data: this is the only place they are read."""

from __future__ import annotations

import tomllib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, ValidationInfo, field_validator
from pydantic_core import ErrorDetails

PERSONA_DIR = Path(__file__).parent

PersonaId = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
_TOOL_ENTRY = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}(\.[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?$"
NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
MAX_EXAMPLES = 6
# One line each, at most 240 characters, never opening with a name tag ("Nova:" or "[Nova]"):
# the prompt puts the persona's own name in front of each.
Example = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=240, pattern=r"^[^\n]+$")]


class PersonaError(ValueError):
    """A persona file is missing, malformed or inconsistent. The message is one line."""


class Persona(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: PersonaId
    display_name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=80)]
    avatar: NonEmpty = Field(description="An https:// image URL or an emoji such as ':owl:' or '🦉'.")
    system_prompt: NonEmpty
    core_memory: str = ""
    talkativeness: float = Field(ge=0.0, le=1.0)
    model: str | None = None
    actions: tuple[str, ...] = ()
    tools: tuple[Annotated[str, StringConstraints(pattern=_TOOL_ENTRY)], ...] = Field(
        default=(),
        description='Tools from MCP servers ([mcp.servers.NAME] in config.toml): "git" for all of a server\'s, "git.git_status" for one.',
    )
    expertise: tuple[str, ...] = Field(
        default=(), description="Topics this persona knows well: the moderator may invite it when they come up."
    )
    capabilities: tuple[Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,31}$")], ...] = Field(
        default=(),
        description="Kinds of task step this persona takes on (research, writing...): task plans assign by them.",
    )
    stance: str = Field(
        default="",
        description='How this persona answers, as what it does ("pokes holes and asks for numbers"), never a '
        'role noun it could quote back ("as a skeptic"): each turn\'s question carries it.',
    )
    catchphrase: str = Field(
        default="",
        description="A signature phrase the scripted test double uses to reply in this persona's voice.",
    )
    examples: tuple[Example, ...] = Field(
        default=(),
        max_length=MAX_EXAMPLES,
        description="A few lines in the persona's own voice, like a character card's example dialogue: "
        "a base model reads them as its earlier lines, a chat model in its system prompt.",
    )

    @field_validator("examples")
    @classmethod
    def _no_name_tags(cls, examples: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        name = str(info.data.get("display_name", "")).casefold()
        for number, line in enumerate(examples, start=1):
            if line.startswith("[") or (name and line.casefold().startswith(f"{name}:")):
                raise ValueError(
                    f"example {number} ({line[:40]!r}) is a line alone, without a name tag such as 'Nova:' in front"
                )
        return examples

    @property
    def avatar_is_url(self) -> bool:
        return self.avatar.startswith(("http://", "https://"))


@dataclass(frozen=True)
class CheckedFile:
    """One persona file: its persona when it is valid, and every problem found ("field: what is wrong")."""

    path: Path
    persona: Persona | None
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # what a valid persona would do better with ("stance: ...")

    def lines(self) -> list[str]:
        return [f"{self.path}: {problem}" for problem in self.problems]

    def warning_lines(self) -> list[str]:
        return [f"{self.path}: warning: {warning}" for warning in self.warnings]


def _describe(error: ErrorDetails) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "(file)"
    if error["type"] == "missing":
        return f"{where}: missing required field"
    if error["type"] == "extra_forbidden":
        return f"{where}: unknown field"
    if error["type"] == "too_long" and "ctx" in error:
        return f"{where}: at most {error['ctx']['max_length']} (got {error['ctx']['actual_length']})"
    if error["type"] == "value_error":  # our own validators' words already say what is wrong
        return f"{where}: {error['msg'].removeprefix('Value error, ')}"
    return f"{where}: {error['msg']} (got {error.get('input')!r})"


KnownTools = Mapping[str, Collection[str] | None]
"""The configured MCP servers, each with the tools it listed (None while it has not listed any yet)."""


def check_persona_file(
    path: Path, known_actions: Collection[str] | None = None, known_tools: KnownTools | None = None
) -> CheckedFile:
    """Every problem of one file on its own; `known_actions` (when given) are the action names it may
    list, `known_tools` the MCP servers it may name and, once a server has listed them, its tools."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        return CheckedFile(path, None, (f"not valid TOML: {exc}",))
    except UnicodeDecodeError as exc:
        return CheckedFile(path, None, (f"not UTF-8 text (at byte {exc.start})",))
    except OSError as exc:
        return CheckedFile(path, None, (f"cannot be read ({exc.strerror or type(exc).__name__})",))
    persona: Persona | None = None
    problems: list[str] = []
    try:
        persona = Persona.model_validate(raw)
    except ValidationError as exc:
        problems = [_describe(error) for error in exc.errors()]
    actions = raw.get("actions")
    if known_actions is not None and isinstance(actions, list):
        known = ", ".join(known_actions)
        problems += [
            f"actions: unknown action {name!r} (known: {known})"
            for name in actions
            if isinstance(name, str) and name not in known_actions
        ]
    tools = raw.get("tools")
    if known_tools is not None and isinstance(tools, list):
        problems += [
            problem for entry in tools if isinstance(entry, str) and (problem := _tool_problem(entry, known_tools))
        ]
    if problems or persona is None:
        return CheckedFile(path, None, tuple(problems))
    return CheckedFile(path, persona, warnings=tuple(persona_warnings(persona)))


NO_STANCE = (
    'stance: none; one line of what this persona does when it answers ("pokes holes and asks for numbers") '
    "keeps its replies its own"
)


def persona_warnings(persona: Persona) -> list[str]:
    """What a valid persona lacks that its replies would show."""
    return [] if persona.stance.strip() else [NO_STANCE]


def _tool_problem(entry: str, known_tools: KnownTools) -> str | None:
    server, _, tool = entry.partition(".")
    if server not in known_tools:
        return f"tools: unknown MCP server {server!r} (configured: {', '.join(known_tools) or 'none'})"
    listed = known_tools[server]
    if tool and listed is not None and tool not in listed:
        return f"tools: server {server!r} has no tool {tool!r} (it lists: {', '.join(sorted(listed)) or 'none'})"
    return None


def check_persona_files(
    paths: Iterable[Path], known_actions: Collection[str] | None = None, known_tools: KnownTools | None = None
) -> list[CheckedFile]:
    """Each file on its own, then together: ids and display names must be unique across them."""
    checked: list[CheckedFile] = []
    origin: dict[str, Path] = {}
    names: dict[str, str] = {}
    for path in paths:
        one = check_persona_file(path, known_actions, known_tools)
        persona = one.persona
        if persona is not None:
            taken = names.get(persona.display_name.casefold())
            if persona.id in origin:
                one = replace(
                    one, problems=(f"id: duplicate persona id {persona.id!r} (also in {origin[persona.id]})",)
                )
            elif taken is not None:
                one = replace(
                    one, problems=(f"display_name: {persona.display_name!r} is already used by persona {taken!r}",)
                )
            origin.setdefault(persona.id, path)
            names.setdefault(persona.display_name.casefold(), persona.id)
        checked.append(one)
    return checked


def first_problem(lines: Sequence[str], where: Path) -> PersonaError:
    """One line for the bot's error: the first problem, and where to see them all."""
    more = f" (and {len(lines) - 1} more: roundtable persona check {where})" if len(lines) > 1 else ""
    return PersonaError(lines[0] + more)


def persona_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise PersonaError(f"{directory}: persona directory not found")
    return sorted(directory.glob("*.toml"))


def load_personas(
    directory: Path = PERSONA_DIR, known_actions: Collection[str] | None = None, known_tools: KnownTools | None = None
) -> dict[str, Persona]:
    """Every *.toml in directory, keyed by id, in file-name order; a PersonaError names the first problem."""
    checked = check_persona_files(persona_files(directory), known_actions, known_tools)
    if not checked:
        raise PersonaError(f"{directory}: no persona files (*.toml)")
    problems = [line for one in checked for line in one.lines()]
    if problems:
        raise first_problem(problems, directory)
    return {one.persona.id: one.persona for one in checked if one.persona is not None}

"""Load and validate persona TOML files. Personas are data: this is the only place they are read."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

PERSONA_DIR = Path(__file__).parent

PersonaId = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


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
    catchphrase: str = Field(
        default="",
        description="A signature phrase the scripted test double uses to reply in this persona's voice.",
    )

    @property
    def avatar_is_url(self) -> bool:
        return self.avatar.startswith(("http://", "https://"))


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(file)"
    if first["type"] == "missing":
        return f"{where}: missing required field"
    if first["type"] == "extra_forbidden":
        return f"{where}: unknown field"
    return f"{where}: {first['msg']} (got {first.get('input')!r})"


def load_persona_file(path: Path) -> Persona:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise PersonaError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise PersonaError(f"{path}: not UTF-8 text (at byte {exc.start})") from None
    except OSError as exc:
        raise PersonaError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        return Persona.model_validate(raw)
    except ValidationError as exc:
        raise PersonaError(f"{path}: {_describe(exc)}") from None


def load_personas(directory: Path = PERSONA_DIR) -> dict[str, Persona]:
    """Every *.toml in directory, keyed by id, in file-name order."""
    if not directory.is_dir():
        raise PersonaError(f"{directory}: persona directory not found")
    personas: dict[str, Persona] = {}
    origin: dict[str, Path] = {}
    for path in sorted(directory.glob("*.toml")):
        persona = load_persona_file(path)
        if persona.id in personas:
            raise PersonaError(f"{path}: duplicate persona id {persona.id!r} (also in {origin[persona.id]})")
        names = {p.display_name.casefold(): p.id for p in personas.values()}
        if persona.display_name.casefold() in names:
            raise PersonaError(
                f"{path}: display_name {persona.display_name!r} is already used by persona {names[persona.display_name.casefold()]!r}"
            )
        personas[persona.id] = persona
        origin[persona.id] = path
    if not personas:
        raise PersonaError(f"{directory}: no persona files (*.toml)")
    return personas

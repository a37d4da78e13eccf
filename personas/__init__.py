"""Persona files (one TOML file each) and the loader that validates them."""

from personas.loader import (
    CheckedFile,
    Persona,
    PersonaError,
    check_persona_file,
    check_persona_files,
    first_problem,
    load_personas,
    persona_files,
)

__all__ = [
    "CheckedFile",
    "Persona",
    "PersonaError",
    "check_persona_file",
    "check_persona_files",
    "first_problem",
    "load_personas",
    "persona_files",
]

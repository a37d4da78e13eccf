"""Persona files (one TOML file each) and the loader that validates them."""

from personas.loader import Persona, PersonaError, load_personas

__all__ = ["Persona", "PersonaError", "load_personas"]

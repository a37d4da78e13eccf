"""The two errors a command's text can raise (bot/command_values.py re-exports them)."""

from __future__ import annotations


class CommandError(ValueError):
    """A malformed command; the message is the one line to show the user."""


class UsageError(CommandError):
    """The text does not fit the command: the registry shows the command's usage, then `hint`."""

    def __init__(self, hint: str = "") -> None:
        super().__init__(hint)
        self.hint = hint

"""Who may use which command, the same on every surface, and the one line that refuses.

A channel manager is someone the platform lets change the channel: on Discord, Manage Channels in
that channel or the configured [discord] manager_role; on Slack, a workspace admin or owner (from
users.info) or a user listed in [slack] managers; in the console, the console user. Approvers are
[approvals] approvers. bot/commands.py declares what each command needs by default; [permissions]
opens or closes any of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.command_values import Command
from bot.commands import DEFAULT_NEEDS, DOING, PERMISSIONS, Need


class Permissions:
    def __init__(
        self,
        configured: Mapping[str, Sequence[Need]] | None = None,
        *,
        manager_role: str = "",
        slack_managers: bool = False,
    ) -> None:
        self._needs = {**DEFAULT_NEEDS, **{name: frozenset(needs) for name, needs in (configured or {}).items()}}
        self.manager_role = manager_role
        self.slack_managers = slack_managers

    def needs(self, permission: str) -> frozenset[Need]:
        return self._needs.get(permission, frozenset())

    def refusal(self, command: Command, *, manager: bool, approver: bool) -> str | None:
        """None when someone who is (or is not) a manager and an approver may use the command; else the refusal."""
        name = command.permission
        if (refused := self.manager_refusal(command, manager=manager)) is not None:
            return refused
        if "approver" in self.needs(name) and not approver:
            return f"Only approvers can {DOING.get(name, f'use {typed(name)}')}."
        return None

    def manager_refusal(self, command: Command, *, manager: bool) -> str | None:
        """The refusal when the command needs a channel manager and this is none: checked first, so a
        platform that knows who manages the channel (Discord) may refuse at once."""
        if manager or "manager" not in self.needs(command.permission):
            return None
        return self.managers_only(typed(command.permission))

    def managers_only(self, command: str) -> str:
        """One line on every surface, naming what makes a channel manager on each."""
        role = " or the manager role" if self.manager_role else ""
        listed = " or a listed manager" if self.slack_managers else ""
        return (
            f"Only channel managers can use {command}: it needs Manage Channels{role} on Discord, "
            f"or a workspace admin or owner{listed} on Slack."
        )


def typed(permission: str) -> str:
    """ "moderate_prompt" as it is typed: "/moderate prompt"."""
    return "/" + permission.replace("_", " ")


def unknown_permission(configured: Mapping[str, object]) -> str | None:
    """Why a `[permissions]` table is wrong (a name no command of the registry has), or None.
    Checked here, where the permissions are built: configuration sits below the command registry."""
    unknown = [name for name in configured if name not in PERMISSIONS]
    if not unknown:
        return None
    return f"[permissions] {unknown[0]}: unknown command (known: {', '.join(PERMISSIONS)})"

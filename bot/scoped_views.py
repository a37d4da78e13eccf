"""Scoped views: /outbox and /trust show the current channel's rows (its workspace's or guild's, for
/trust); with the one word "all", every channel's, answered only to an approver of every channel
the bot has seen (bot/service.py's approves_everywhere). The handlers are bot/command_handlers.py's."""

from __future__ import annotations

from collections.abc import Callable

from bot.command_values import Command, Parser, UsageError

ONLY_EVERYWHERE = "Only approvers of every channel can use {command}; without `all` it shows this channel."


def here_or_all(make: Callable[[bool], Command]) -> Parser:
    """A view of this channel, or with the one word "all", of every channel."""

    def parse(rest: str) -> Command:
        words = rest.lower().split()
        if words not in ([], ["all"]):
            raise UsageError()
        return make(bool(words))

    return parse

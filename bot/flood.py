"""Flood limits: how many of a person's messages, and how many rounds in a channel, may start a round per minute.

A message past a limit is still stored (the personas see it later) but starts no round; its sender
is told once a minute, not once per message. Pure: time is passed in.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass

from bot.command_values import Command, PauseReplies, TaskCommand

WINDOW_SECONDS = 60.0


class SlidingWindow:
    """At most `limit` events per key in any `seconds` long window: a deque of event times per key."""

    def __init__(self, limit: int, seconds: float = WINDOW_SECONDS) -> None:
        self.limit = limit
        self.seconds = seconds
        self._times: dict[Hashable, deque[float]] = {}
        self._swept = 0.0

    def full(self, key: Hashable, now: float) -> bool:
        return len(self._recent(key, now)) >= self.limit

    def add(self, key: Hashable, now: float) -> None:
        self._recent(key, now).append(now)
        if now - self._swept >= self.seconds:  # once a window: forget keys with nothing recent
            self._swept = now
            self._times = {k: times for k, times in self._times.items() if times and times[-1] > now - self.seconds}

    def remove(self, key: Hashable, at: float) -> None:
        """Take back an event added at `at`."""
        times = self._times.get(key)
        if times is not None and at in times:
            times.remove(at)

    def _recent(self, key: Hashable, now: float) -> deque[float]:
        times = self._times.setdefault(key, deque())
        while times and times[0] <= now - self.seconds:
            times.popleft()
        return times


@dataclass(frozen=True)
class Admission:
    """Whether a message starts a round and, when it does not, the notice its sender is due (or None)."""

    channel_key: str
    user_id: str
    at: float
    starts_round: bool
    notice: str | None = None


class FloodGate:
    def __init__(self, user_messages_per_minute: int, channel_rounds_per_minute: int) -> None:
        self.users = SlidingWindow(user_messages_per_minute)
        self.channels = SlidingWindow(channel_rounds_per_minute)
        self.notices = SlidingWindow(1)  # one notice per person and channel a minute

    def admit(self, channel_key: str, user_id: str, now: float, *, exempt: bool = False) -> Admission:
        """Count a message that is about to be stored. An exempt sender's rounds count towards the channel's
        but are never refused; a refused message counts towards nothing."""
        person = (channel_key, user_id)
        over_user = not exempt and self.users.full(person, now)
        if not over_user and (exempt or not self.channels.full(channel_key, now)):
            self.users.add(person, now)
            self.channels.add(channel_key, now)
            return Admission(channel_key, user_id, now, starts_round=True)
        if self.notices.full(person, now):
            return Admission(channel_key, user_id, now, starts_round=False)
        self.notices.add(person, now)
        notice = (
            f"Slow down a little: {self._why(over_user)}. Your messages are kept and the personas will see them, "
            "but they start no reply until the minute is up."
        )
        return Admission(channel_key, user_id, now, starts_round=False, notice=notice)

    def admit_command(self, channel_key: str, user_id: str, now: float, *, exempt: bool = False) -> str | None:
        """A command that starts model work (/task, /task replan, /moderate resume) counts like a
        message that starts a round; past a limit it is refused, in one line (None: it may run)."""
        over_user = not exempt and self.users.full((channel_key, user_id), now)
        if not over_user and (exempt or not self.channels.full(channel_key, now)):
            self.users.add((channel_key, user_id), now)
            self.channels.add(channel_key, now)
            return None
        return f"Slow down a little: {self._why(over_user)}. Try the command again when the minute is up."

    def _why(self, over_user: bool) -> str:
        if over_user:
            n = self.users.limit
            return f"you have sent {n} message{'s' if n != 1 else ''} here in the last minute"
        return f"this channel has had {self.channels.limit} rounds in the last minute"

    def withdraw(self, admission: Admission) -> None:
        """Take back what admit counted, for a message that was not stored after all (a duplicate)."""
        person = (admission.channel_key, admission.user_id)
        if admission.starts_round:
            self.users.remove(person, admission.at)
            self.channels.remove(admission.channel_key, admission.at)
        elif admission.notice is not None:
            self.notices.remove(person, admission.at)


def starts_model_work(command: Command) -> bool:
    """Whether a command starts model work, and so passes the flood limits and the budget like a
    message: a new task or plan (/task TEXT, /task replan; the task runner checks the budget again
    before each step), and /moderate resume, which answers what came in meanwhile."""
    if isinstance(command, TaskCommand):
        return command.verb in ("start", "replan")
    return isinstance(command, PauseReplies) and not command.pause

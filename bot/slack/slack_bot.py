"""SlackBot: what every Slack handler module needs, in one place.

Handler modules (events, commands, approvals) each expose `register(bot: SlackBot) -> None`
and attach their listeners to `bot.bolt`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Coroutine
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.app import App
from bot.settings import SlackSection
from bot.slack.http_server import SignedBolt
from bot.slack.text import escape_for_slack

# -- background work ---------------------------------------------------------------------------------
# Work started after Slack has been acknowledged: tracked, so it can be awaited, and never fatal.

log = logging.getLogger(__name__)


class BackgroundWork:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, work: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(self._guarded(work, name), name=name)
        self._tasks.add(task)  # the event loop keeps only weak references to tasks
        task.add_done_callback(self._tasks.discard)

    async def wait_idle(self) -> None:
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def close(self, grace_seconds: float = 5.0) -> None:
        """Let running work finish (it is short: a name lookup and a database write), then cancel the rest."""
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=grace_seconds)
        for task in self._tasks:
            task.cancel()
        await self.wait_idle()

    @staticmethod
    async def _guarded(work: Coroutine[Any, Any, None], name: str) -> None:
        try:
            await work
        except Exception:
            log.exception("Slack work %s failed", name)


# -- recently seen messages --------------------------------------------------------------------------
# A small in-memory record of recently seen Slack message ids.
#
# Storage's processed_events is the durable dedupe, but the service runs text commands before it
# consults storage, so retries and message/app_mention twins are dropped here first as well.


class RecentlySeen:
    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._ids: OrderedDict[str, None] = OrderedDict()

    def first_time(self, key: str) -> bool:
        """True the first time key is offered (within the last `capacity` keys), False after that."""
        if key in self._ids:
            return False
        self._ids[key] = None
        if len(self._ids) > self.capacity:
            self._ids.popitem(last=False)
        return True

    def forget(self, key: str) -> None:
        """Offer key again as new: its event could not be taken, and Slack will deliver it again."""
        self._ids.pop(key, None)


# -- users ----------------------------------------------------------------------------------------
# Slack user ids to the names personas see, and whether each is a channel manager (a workspace admin
# or owner of the channel's own workspace, or listed in [slack] managers), through users.info. An
# admin flag is trusted for ADMIN_SECONDS: a person whose admin rights are withdrawn loses them here
# within minutes.

ADMIN_SECONDS = 300.0


@dataclass(frozen=True)
class SlackUser:
    name: str
    admin: bool  # users.info: is_admin, is_owner or is_primary_owner
    team: str = ""  # the workspace the user (and their admin flag) belongs to
    looked_up: float = 0.0  # when users.info said so (the clock's time)


class UserNames:
    def __init__(
        self,
        client: AsyncWebClient,
        managers: Collection[str] = (),
        capacity: int = 2000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.managers = frozenset(managers)
        self.capacity = capacity
        self.clock = clock
        self._users: OrderedDict[str, SlackUser] = OrderedDict()

    async def user(self, user_id: str, *, max_age: float | None = None) -> SlackUser | None:
        """What users.info says of the user (asked again when the cached answer is older than
        `max_age` seconds); None when the lookup failed (and is not cached)."""
        cached = self._users.get(user_id)
        if cached is not None and max_age is not None and self.clock() - cached.looked_up > max_age:
            del self._users[user_id]
        if user_id in self._users:
            self._users.move_to_end(user_id)
            return self._users[user_id]
        try:
            response = await self.client.users_info(user=user_id)
        except SlackClientError as exc:
            error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
            log.warning("users.info for %s failed: %s", user_id, error)
            return None
        user = response.get("user") or {}
        profile = user.get("profile") or {}
        name = profile.get("display_name") or profile.get("real_name") or user.get("real_name") or user.get("name")
        admin = any(user.get(flag) is True for flag in ("is_admin", "is_owner", "is_primary_owner"))
        team = str(user.get("team_id") or "")
        self._users[user_id] = SlackUser(str(name or user_id), admin, team, self.clock())
        if len(self._users) > self.capacity:
            self._users.popitem(last=False)
        return self._users[user_id]

    async def name_of(self, user_id: str) -> str:
        """The display name, else the real name, else the user id."""
        user = await self.user(user_id)
        return user.name if user is not None else user_id

    async def manages(self, user_id: str, team: str) -> bool:
        """A manager of a channel of workspace `team`: listed in [slack] managers, or an admin or owner
        of that workspace (an admin of another one, say in a shared channel, is not)."""
        if user_id in self.managers:
            return True
        user = await self.user(user_id, max_age=ADMIN_SECONDS)
        return user is not None and user.admin and user.team == team


# -- private answers ---------------------------------------------------------------------------------
# Answers only one person sees: chat.postEphemeral, logged (never raised) when Slack refuses.

log = logging.getLogger(__name__)


async def tell_privately(client: AsyncWebClient, channel: str, user: str, text: str, thread: str | None = None) -> None:
    """`text` is plain: it is escaped here."""
    try:
        await client.chat_postEphemeral(channel=channel, user=user, text=escape_for_slack(text), thread_ts=thread)
    except SlackClientError as exc:
        error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
        log.warning("chat.postEphemeral in %s failed: %s", channel, error)


# -- the bot ----------------------------------------------------------------------------------------


@dataclass
class SlackBot:
    bolt: SignedBolt
    roundtable: App
    settings: SlackSection
    names: UserNames
    work: BackgroundWork = field(default_factory=BackgroundWork)
    seen: RecentlySeen = field(default_factory=RecentlySeen)

    async def wait_idle(self) -> None:
        """Until acknowledged work has been handed to the service and every queued round has run."""
        await self.work.wait_idle()
        await self.roundtable.service.wait_idle()
        await self.work.wait_idle()

    async def close(self) -> None:
        await self.work.close()

"""SlackBot: what every Slack handler module needs, in one place.

Handler modules (events, commands, approvals) each expose `register(bot: SlackBot) -> None`
and attach their listeners to `bot.bolt`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.app import App
from bot.config import SlackSection
from bot.slack.background import BackgroundWork
from bot.slack.http_server import SignedBolt
from bot.slack.seen import RecentlySeen
from bot.slack.users import UserNames


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

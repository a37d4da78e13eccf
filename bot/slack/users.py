"""Slack user ids to the names personas see, looked up once through users.info."""

from __future__ import annotations

import logging
from collections import OrderedDict

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)


class UserNames:
    def __init__(self, client: AsyncWebClient, capacity: int = 2000) -> None:
        self.client = client
        self.capacity = capacity
        self._names: OrderedDict[str, str] = OrderedDict()

    async def name_of(self, user_id: str) -> str:
        """The display name, else the real name, else the user id (a failed lookup is not cached)."""
        if user_id in self._names:
            self._names.move_to_end(user_id)
            return self._names[user_id]
        try:
            response = await self.client.users_info(user=user_id)
        except SlackClientError as exc:
            error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
            log.warning("users.info for %s failed: %s", user_id, error)
            return user_id
        user = response.get("user") or {}
        profile = user.get("profile") or {}
        name = profile.get("display_name") or profile.get("real_name") or user.get("real_name") or user.get("name")
        self._names[user_id] = str(name or user_id)
        if len(self._names) > self.capacity:
            self._names.popitem(last=False)
        return self._names[user_id]

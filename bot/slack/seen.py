"""A small in-memory record of recently seen Slack message ids.

Storage's processed_events is the durable dedupe, but the service runs text commands before it
consults storage, so retries and message/app_mention twins are dropped here first as well.
"""

from __future__ import annotations

from collections import OrderedDict


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

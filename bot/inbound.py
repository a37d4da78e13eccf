"""What an adapter hands the service: a platform event reduced to plain data."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Inbound:
    channel_key: str  # "console:general", "slack:T01:C02", "discord:123"
    author_id: str
    author_name: str
    text: str
    mentions: tuple[str, ...] = field(default=())  # persona ids the platform says were @mentioned
    event_id: str | None = None  # the platform's id, for dedupe of redeliveries
    thread: str | None = None
    author_team: str | None = None  # on Slack, the author's workspace: approvers are matched on team and user
    author_manages: bool = False  # the platform says the author may change the channel (bot/permissions.py)
    tenant: str = ""  # its workspace or guild: "slack:T01", "discord:<guild id>", "console"
    parent_key: str | None = None  # for a thread, the key of the channel it is in (whose rules it keeps)
    private: bool | None = None  # whether only some of the tenant can read the channel (None: not known)

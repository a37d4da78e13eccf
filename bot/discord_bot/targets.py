"""The channel a persona's action names ("#news", "<#123>", "123"), looked up in the server it spoke in.

Only that server: a persona can never post into another server the bot happens to be in.
"""

from __future__ import annotations

import re

import discord

_BY_ID = re.compile(r"<#(\d+)>|(\d+)")


class UnknownTarget(LookupError):
    """The action names no channel of this server; the message becomes the persona's tool result."""


async def target_channel(
    client: discord.Client, near_channel_id: int, name: str
) -> discord.abc.GuildChannel | discord.Thread:
    here = client.get_channel(near_channel_id) or await client.fetch_channel(near_channel_id)
    guild = getattr(here, "guild", None)
    if guild is None:
        raise UnknownTarget("actions can only name channels of a server")
    wanted = name.strip().removeprefix("#")
    if by_id := _BY_ID.fullmatch(wanted):
        found = guild.get_channel_or_thread(int(by_id.group(1) or by_id.group(2)))
    else:
        found = discord.utils.get(guild.text_channels, name=wanted.lower())
    if not isinstance(found, discord.TextChannel | discord.Thread):
        raise UnknownTarget(f"there is no text channel #{wanted} in this server")
    return found

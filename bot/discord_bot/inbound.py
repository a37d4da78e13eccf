"""A Discord message reduced to an Inbound, or None when Roundtable should not answer it."""

from __future__ import annotations

import re

import discord

from bot.inbound import Inbound

_CHAT_TYPES = (discord.MessageType.default, discord.MessageType.reply)
_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")
_CHANNEL_MENTION = re.compile(r"<#(\d+)>")


def key_for_channel(channel_id: int) -> str:
    """A thread is a channel of its own in Discord, so it gets its own key (and its own round queue)."""
    return f"discord:{channel_id}"


def channel_id_of(key: str) -> int:
    return int(key.removeprefix("discord:"))


def to_inbound(message: discord.Message, bot_user_id: int) -> Inbound | None:
    # Bots and webhooks are never answered: our persona posts are webhook messages, so this stops loops.
    if message.author.bot or message.webhook_id is not None:
        return None
    if message.guild is None or message.type not in _CHAT_TYPES:
        return None
    text = readable_text(message, bot_user_id).strip()
    if not text:
        return None
    return Inbound(
        channel_key=key_for_channel(message.channel.id),
        author_id=str(message.author.id),  # as [approvals] approvers lists Discord users
        author_name=message.author.display_name,
        text=text,
        event_id=f"discord:{message.id}",
        tenant=f"discord:{message.guild.id}",
        parent_key=parent_key(message.channel),
        private=is_private(message.channel),
    )


def is_private(channel: object) -> bool:
    """Whether only some of the guild read the channel: a private thread, or a channel (or a thread's
    channel) that the guild's @everyone role cannot view. Discord: docs.discord.com/developers/topics/permissions
    (VIEW_CHANNEL, overwrites for the @everyone role, whose id is the guild's)."""
    if isinstance(channel, discord.Thread):
        if channel.type is discord.ChannelType.private_thread:
            return True
        channel = channel.parent
    if isinstance(channel, discord.abc.GuildChannel):
        return not channel.permissions_for(channel.guild.default_role).view_channel
    return True


def parent_key(channel: object) -> str | None:
    """A thread's channel, whose rules the thread keeps; None for a channel."""
    parent_id = channel.parent_id if isinstance(channel, discord.Thread) else None
    return key_for_channel(parent_id) if parent_id is not None else None


def readable_text(message: discord.Message, bot_user_id: int) -> str:
    """The text with mentions of the bot removed and other mentions written as names.

    Mentioning the bot only calls the table; personas are picked by name in the text.
    """
    guild = message.guild
    bot_mentions = [rf"<@!?{bot_user_id}>"]
    if guild is not None and guild.self_role is not None:
        bot_mentions.append(rf"<@&{guild.self_role.id}>")  # the bot's own managed role
    text = re.sub(rf"(?:{'|'.join(bot_mentions)})[ \t]*", "", message.content)

    users = {user.id: user.display_name for user in message.mentions}

    def user(match: re.Match[str]) -> str:
        return f"@{users.get(int(match.group(1)), 'someone')}"

    def role(match: re.Match[str]) -> str:
        found = guild.get_role(int(match.group(1))) if guild is not None else None
        return f"@{found.name if found else 'role'}"

    def channel(match: re.Match[str]) -> str:
        found = guild.get_channel_or_thread(int(match.group(1))) if guild is not None else None
        return f"#{found.name if found else 'channel'}"

    text = _USER_MENTION.sub(user, text)
    text = _ROLE_MENTION.sub(role, text)
    return _CHANNEL_MENTION.sub(channel, text)

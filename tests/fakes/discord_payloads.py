"""JSON payloads shaped like Discord API v10 objects, for the fake Discord in discord_server.py.

One guild ("Roundtable Test") with two text channels (#general and #news), one public thread in
#general (#general > plans), the bot, and a human member. Only the fields discord.py reads are filled in.
A second guild ("Second Table", one channel #lobby) sits on the other shard of two, for the shard tests:
Discord sends a guild's events to shard (guild_id >> 22) % shard_count.
"""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime
from typing import Any

Payload = dict[str, Any]

GUILD_ID = 1_100_000_000_000_000_001
TEXT_CHANNEL_ID = 1_100_000_000_000_000_002
THREAD_ID = 1_100_000_000_000_000_003
BOT_USER_ID = 1_100_000_000_000_000_004
APPLICATION_ID = BOT_USER_ID  # as for every bot created in the Developer Portal nowadays
HUMAN_USER_ID = 1_100_000_000_000_000_005
OWNER_USER_ID = 1_100_000_000_000_000_006
BOT_ROLE_ID = 1_100_000_000_000_000_007
MANAGER_ROLE_ID = 1_100_000_000_000_000_008
MANAGER_ROLE_NAME = "Table Manager"
NEWS_CHANNEL_ID = 1_100_000_000_000_000_009
SECOND_GUILD_ID = GUILD_ID + (1 << 22)  # the next shard of two: (id >> 22) % 2 differs
SECOND_CHANNEL_ID = SECOND_GUILD_ID + 1
SECOND_BOT_ROLE_ID = SECOND_GUILD_ID + 2

TIMESTAMP = "2026-01-02T03:04:05.000000+00:00"
DISCORD_EPOCH_MS = 1_420_070_400_000

# Permission bits (https://discord.com/developers/docs/topics/permissions)
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
READ_MESSAGE_HISTORY = 1 << 16
MANAGE_CHANNELS = 1 << 4
MANAGE_WEBHOOKS = 1 << 29
USE_APPLICATION_COMMANDS = 1 << 31
SEND_MESSAGES_IN_THREADS = 1 << 38
MEMBER_PERMISSIONS = (
    VIEW_CHANNEL | SEND_MESSAGES | READ_MESSAGE_HISTORY | USE_APPLICATION_COMMANDS | SEND_MESSAGES_IN_THREADS
)
BOT_PERMISSIONS = MEMBER_PERMISSIONS | MANAGE_WEBHOOKS

_sequence = itertools.count(1)


def snowflake() -> int:
    """A fresh id, time-ordered like Discord's."""
    return ((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22) | (next(_sequence) & 0x3FFFFF)


def timestamp_of(snowflake_id: int) -> str:
    """The ISO8601 time a snowflake was made, as a message's `timestamp` reads it: the first 42 bits are
    milliseconds since the Discord epoch (https://discord.com/developers/docs/reference#snowflakes)."""
    made = ((snowflake_id >> 22) + DISCORD_EPOCH_MS) / 1000
    return datetime.fromtimestamp(made, UTC).isoformat(timespec="microseconds")


def now_timestamp() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def user(user_id: int, name: str, *, bot: bool = False) -> Payload:
    return {
        "id": str(user_id),
        "username": name.lower(),
        "global_name": name,
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
        "public_flags": 0,
    }


def bot_user() -> Payload:
    return {**user(BOT_USER_ID, "Roundtable", bot=True), "verified": True, "mfa_enabled": False, "flags": 0}


def human() -> Payload:
    return user(HUMAN_USER_ID, "Ana")


def application() -> Payload:
    return {
        "id": str(APPLICATION_ID),
        "name": "Roundtable",
        "description": "",
        "icon": None,
        "bot_public": True,
        "bot_require_code_grant": False,
        "owner": user(OWNER_USER_ID, "Owner"),
        "verify_key": "0" * 64,
        "flags": 0,
        "team": None,
        "summary": "",
    }


def role(role_id: int, name: str, permissions: int, *, managed: bool = False, bot_id: int | None = None) -> Payload:
    payload: Payload = {
        "id": str(role_id),
        "name": name,
        "color": 0,
        "hoist": False,
        "position": 0 if role_id in (GUILD_ID, SECOND_GUILD_ID) else 1,  # @everyone's id is its guild's
        "permissions": str(permissions),
        "managed": managed,
        "mentionable": False,
        "flags": 0,
    }
    if bot_id is not None:
        payload["tags"] = {"bot_id": str(bot_id)}
    return payload


def shard_of(guild_id: int, shard_count: int) -> int:
    """The shard Discord sends a guild's events to."""
    return (guild_id >> 22) % shard_count


def guild_of(channel_id: int) -> int:
    return SECOND_GUILD_ID if channel_id == SECOND_CHANNEL_ID else GUILD_ID


def text_channel(channel_id: int = TEXT_CHANNEL_ID, name: str = "general") -> Payload:
    return {
        "id": str(channel_id),
        "type": 0,
        "guild_id": str(guild_of(channel_id)),
        "name": name,
        "position": 0 if channel_id == TEXT_CHANNEL_ID else 1,
        "permission_overwrites": [],
        "nsfw": False,
        "parent_id": None,
        "topic": None,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "flags": 0,
    }


def thread() -> Payload:
    return {
        "id": str(THREAD_ID),
        "type": 11,  # public thread
        "guild_id": str(GUILD_ID),
        "parent_id": str(TEXT_CHANNEL_ID),
        "owner_id": str(HUMAN_USER_ID),
        "name": "plans",
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "message_count": 0,
        "member_count": 1,
        "flags": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": TIMESTAMP,
            "locked": False,
        },
    }


def channels_by_id() -> dict[int, Payload]:
    return {
        TEXT_CHANNEL_ID: text_channel(),
        NEWS_CHANNEL_ID: news_channel(),
        THREAD_ID: thread(),
        SECOND_CHANNEL_ID: text_channel(SECOND_CHANNEL_ID, "lobby"),
    }


def news_channel() -> Payload:
    return text_channel(NEWS_CHANNEL_ID, "news")


def member(user_payload: Payload, roles: list[int], *, permissions: int | None = None) -> Payload:
    payload: Payload = {
        "user": user_payload,
        "roles": [str(r) for r in roles],
        "joined_at": TIMESTAMP,
        "deaf": False,
        "mute": False,
        "flags": 0,
        "pending": False,
        "nick": None,
        "avatar": None,
    }
    if permissions is not None:
        payload["permissions"] = str(permissions)  # only in interactions: resolved for the channel
    return payload


def guild_create(guild_id: int = GUILD_ID) -> Payload:
    if guild_id == SECOND_GUILD_ID:
        return {
            **guild_create(),
            "id": str(SECOND_GUILD_ID),
            "name": "Second Table",
            "roles": [
                role(SECOND_GUILD_ID, "@everyone", MEMBER_PERMISSIONS),
                role(SECOND_BOT_ROLE_ID, "Roundtable", BOT_PERMISSIONS, managed=True, bot_id=BOT_USER_ID),
            ],
            "channels": [text_channel(SECOND_CHANNEL_ID, "lobby")],
            "threads": [],
            "members": [member(bot_user(), [SECOND_BOT_ROLE_ID]), member(human(), [])],
        }
    return {
        "id": str(GUILD_ID),
        "name": "Roundtable Test",
        "owner_id": str(OWNER_USER_ID),
        "unavailable": False,
        "member_count": 2,
        "large": False,
        "features": [],
        "preferred_locale": "en-US",
        "joined_at": TIMESTAMP,
        "roles": [
            role(GUILD_ID, "@everyone", MEMBER_PERMISSIONS),
            role(BOT_ROLE_ID, "Roundtable", BOT_PERMISSIONS, managed=True, bot_id=BOT_USER_ID),
            role(MANAGER_ROLE_ID, MANAGER_ROLE_NAME, MEMBER_PERMISSIONS),
        ],
        "emojis": [],
        "stickers": [],
        "channels": [text_channel(), news_channel()],
        "threads": [thread()],
        "members": [member(bot_user(), [BOT_ROLE_ID]), member(human(), [])],
        "voice_states": [],
        "presences": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "soundboard_sounds": [],
    }


def ready(
    session_id: str,
    resume_gateway_url: str,
    *,
    guild_ids: tuple[int, ...] = (GUILD_ID,),
    shard: tuple[int, int] = (0, 1),
) -> Payload:
    return {
        "v": 10,
        "user": bot_user(),
        "guilds": [{"id": str(guild_id), "unavailable": True} for guild_id in guild_ids],
        "session_id": session_id,
        "resume_gateway_url": resume_gateway_url,
        "application": {"id": str(APPLICATION_ID), "flags": 0},
        "shard": list(shard),
    }


def message(
    channel_id: int,
    content: str,
    *,
    author: Payload,
    message_id: int | None = None,
    webhook_id: int | None = None,
    mentions: list[Payload] | None = None,
    in_guild: bool = True,
    components: list[Payload] | None = None,
) -> Payload:
    message_id = message_id or snowflake()
    payload: Payload = {
        "id": str(message_id),
        "channel_id": str(channel_id),
        "author": author,
        "content": content,
        "timestamp": timestamp_of(message_id),  # the clock's, as Discord stamps it
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": mentions or [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": False,
        "type": 0,
        "flags": 0,
        "components": components or [],
    }
    if in_guild:
        payload["guild_id"] = str(guild_of(channel_id))
        if webhook_id is None:
            payload["member"] = {k: v for k, v in member(author, []).items() if k != "user"}
    if webhook_id is not None:
        payload["webhook_id"] = str(webhook_id)
    return payload


def webhook(webhook_id: int, token: str, channel_id: int, name: str) -> Payload:
    return {
        "id": str(webhook_id),
        "type": 1,
        "guild_id": str(guild_of(channel_id)),
        "channel_id": str(channel_id),
        "user": bot_user(),
        "name": name,
        "avatar": None,
        "token": token,
        "application_id": str(APPLICATION_ID),
    }


def slash_command_interaction(
    interaction_id: int,
    token: str,
    *,
    command_id: int,
    name: str,
    options: list[Payload],
    channel_id: int,
    permissions: int,
    roles: list[int],
    user: Payload | None = None,
) -> Payload:
    data = {"id": str(command_id), "name": name, "type": 1, "options": options}
    by = member(user or human(), roles, permissions=permissions)
    return interaction(interaction_id, token, 2, data, channel_id=channel_id, member_payload=by)


def button_interaction(
    interaction_id: int, token: str, *, message_payload: Payload, custom_id: str, clicker: Payload
) -> Payload:
    """A click on a button of `message_payload` (MESSAGE_COMPONENT), which Discord sends along."""
    data = {"custom_id": custom_id, "component_type": 2}
    payload = interaction(
        interaction_id,
        token,
        3,
        data,
        channel_id=int(message_payload["channel_id"]),
        member_payload=member(clicker, [], permissions=MEMBER_PERMISSIONS),
    )
    return {**payload, "message": message_payload}


def modal_submit_interaction(
    interaction_id: int, token: str, *, custom_id: str, values: dict[str, str], channel_id: int, clicker: Payload
) -> Payload:
    """A submitted form (MODAL_SUBMIT): each text input inside a label, as Discord sends them since 2025."""
    fields = [
        {"type": 18, "id": 2 * n + 1, "component": {"type": 4, "id": 2 * n + 2, "custom_id": key, "value": value}}
        for n, (key, value) in enumerate(values.items())
    ]
    data = {"custom_id": custom_id, "components": fields}
    return interaction(
        interaction_id,
        token,
        5,
        data,
        channel_id=channel_id,
        member_payload=member(clicker, [], permissions=MEMBER_PERMISSIONS),
    )


def interaction(
    interaction_id: int, token: str, kind: int, data: Payload, *, channel_id: int, member_payload: Payload
) -> Payload:
    return {
        "id": str(interaction_id),
        "application_id": str(APPLICATION_ID),
        "type": kind,  # 2 APPLICATION_COMMAND, 3 MESSAGE_COMPONENT, 5 MODAL_SUBMIT
        "token": token,
        "version": 1,
        "guild_id": str(guild_of(channel_id)),
        "guild": {"id": str(guild_of(channel_id)), "locale": "en-US", "features": []},
        "channel_id": str(channel_id),
        "channel": channels_by_id()[channel_id],
        "member": member_payload,
        "app_permissions": str(BOT_PERMISSIONS),
        "locale": "en-US",
        "guild_locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {"0": str(guild_of(channel_id))},
        "context": 0,
        "attachment_size_limit": 10 * 1024 * 1024,
        "data": data,
    }


def reaction(
    message_id: int,
    emoji: str | None,
    *,
    removed: bool = False,
    user_id: int = HUMAN_USER_ID,
    channel_id: int = TEXT_CHANNEL_ID,
    emoji_id: int | None = None,
    message_author_id: int | None = None,
) -> Payload:
    """The data of MESSAGE_REACTION_ADD (or, `removed`, MESSAGE_REACTION_REMOVE), as
    https://discord.com/developers/docs/topics/gateway-events#message-reaction-add lists it: user_id,
    channel_id, message_id, guild_id (in a guild), emoji (a partial emoji: a unicode one has id null
    and its character as name; a custom one its id, and a name that is null once deleted), burst and
    type (0: a normal reaction); an ADD carries the reacting `member` in a guild and message_author_id."""
    payload: Payload = {
        "user_id": str(user_id),
        "channel_id": str(channel_id),
        "message_id": str(message_id),
        "guild_id": str(guild_of(channel_id)),
        "emoji": {"id": None if emoji_id is None else str(emoji_id), "name": emoji},
        "burst": False,
        "type": 0,
    }
    if not removed:
        payload["member"] = member(user(user_id, "Ana"), [])
        if message_author_id is not None:
            payload["message_author_id"] = str(message_author_id)
    return payload

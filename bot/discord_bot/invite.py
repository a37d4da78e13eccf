"""The permissions Roundtable asks for when it is invited, and the invite link itself."""

from __future__ import annotations

import discord

INVITE_PERMISSIONS = discord.Permissions(
    view_channel=True,
    send_messages=True,
    send_messages_in_threads=True,
    read_message_history=True,
    manage_webhooks=True,  # one webhook per channel lets each persona post under its own name and avatar
    use_application_commands=True,
)
INVITE_SCOPES = ("bot", "applications.commands")


def invite_url(application_id: int) -> str:
    return discord.utils.oauth_url(application_id, permissions=INVITE_PERMISSIONS, scopes=INVITE_SCOPES)

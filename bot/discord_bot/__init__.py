"""The Discord adapter (discord.py 2.x): gateway events in, persona posts out through channel webhooks.

Named discord_bot, not discord, so that it never shadows the discord.py package.
"""

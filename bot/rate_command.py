"""/rate in the console: a person's 👍 or 👎 on one of the personas' newest posts here, stored as a
reaction on Slack or Discord is (bot/votes.py). The posts are counted back from the newest, as
`/rate` alone lists them, so the number a person reads is the number they type."""

from __future__ import annotations

from bot.approval_desk import CommandReply
from bot.command_handlers import Call
from bot.rate_values import RATE_WINDOW, Rate
from storage import history, votes
from storage.records import Line, LineKind

ELSEWHERE = "On Slack and Discord, react to a persona's post with 👍 or 👎 instead."
LOOK_BACK_LINES = 200  # the channel lines read for its newest persona posts
SHOWN_CHARS = 80


async def rate(call: Call, command: Rate) -> CommandReply:
    service = call.service
    if not call.key.startswith("console:"):
        return CommandReply(ELSEWHERE, ok=False)
    if service.votes is None:
        return CommandReply("Votes are not recorded here.", ok=False)
    posts = await newest_posts(call)
    if command.number == 0:
        return CommandReply(listing(posts))
    if command.number > len(posts):
        return CommandReply(f"There is no post {command.number} here; /rate lists the newest.", ok=False)
    line = posts[command.number - 1]
    persona = service.personas.get(line.author_id)
    if persona is None:
        return CommandReply(f"{line.author_name} is no persona here any more.", ok=False)
    post = votes.PersonaPost(f"line:{line.id}", call.key, call.key, persona.id, service.votes.model_of(persona))
    voter = call.who.id or call.who.name or "console"
    await service.votes.rate(post, voter, command.up, command.reason)
    return CommandReply(
        f"{'👍' if command.up else '👎'} on {persona.display_name}'s post {command.number}: «{clip(line.text)}»"
    )


async def newest_posts(call: Call) -> list[Line]:
    """The personas' newest posts here, newest first, at most RATE_WINDOW."""
    lines = await history.recent_channel_lines(call.service.db, call.key, limit=LOOK_BACK_LINES)
    posts = [line for line in reversed(lines) if line.kind is LineKind.PERSONA and line.text.strip()]
    return posts[:RATE_WINDOW]


def listing(posts: list[Line]) -> str:
    if not posts:
        return "No persona has posted here yet."
    shown = [f"{number}. {line.author_name}: «{clip(line.text)}»" for number, line in enumerate(posts, start=1)]
    return "\n".join(["The personas' newest posts here (/rate N up|down [reason], 1 is the newest):", *shown])


def clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SHOWN_CHARS else flat[: SHOWN_CHARS - 1] + "…"

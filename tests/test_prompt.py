"""Role separation: exactly what a persona receives."""

import time

from langchain_core.messages import AIMessage, SystemMessage

from bot.command_values import SetScene
from bot.inbound import Inbound
from graph.prompt import prompt_budget, prompt_tokens
from storage import history
from storage.records import LineKind

KEY = "console:room"


def shape(messages):
    return [(type(m).__name__, m.content) for m in messages[1:]]


async def test_exact_role_separated_messages_with_a_late_joiner(app):
    db = app.db
    await app.service.run_command(KEY, SetScene("A launch retro."))
    await history.append_line(db, KEY, LineKind.HUMAN, "u1", "Ana", "How did the launch go?")
    await history.append_line(db, KEY, LineKind.PERSONA, "nova", "Nova", "It went great!")
    await history.append_line(db, KEY, LineKind.PERSONA, "sage", "Sage", "Define great.")
    await history.set_membership(db, KEY, "pixel", active=True, marker_text="Pixel joined")
    await history.append_line(db, KEY, LineKind.HUMAN, "u2", "Ben", "Pixel, the banner?")
    await history.append_line(db, KEY, LineKind.PERSONA, "pixel", "Pixel", "Teal, obviously.")

    nova = await app.engine.prompt_for(KEY, "nova")
    assert isinstance(nova[0], SystemMessage)
    system = nova[0].content
    assert system.startswith("You are Nova, one participant in a group chat.")
    assert "Never write lines for other participants" in system
    assert (
        system.index("You are Nova")
        < system.index("upbeat product visionary")
        < system.index("What you remember")
        < system.index("A launch retro.")
    )
    assert shape(nova) == [
        ("HumanMessage", "[system] scene: A launch retro."),
        ("HumanMessage", "Ana: How did the launch go?"),
        ("AIMessage", "It went great!"),
        ("HumanMessage", "[Sage] Define great."),
        ("HumanMessage", "[system] Pixel joined"),
        ("HumanMessage", "Ben: Pixel, the banner?"),
        ("HumanMessage", "[Pixel] Teal, obviously."),
    ]
    sage = await app.engine.prompt_for(KEY, "sage")
    assert ("HumanMessage", "[Nova] It went great!") in shape(sage)
    assert ("AIMessage", "Define great.") in shape(sage)

    pixel = await app.engine.prompt_for(KEY, "pixel")  # joined late: sees nothing from before
    assert shape(pixel) == [
        ("HumanMessage", "[system] Pixel joined"),
        ("HumanMessage", "Ben: Pixel, the banner?"),
        ("AIMessage", "Teal, obviously."),
    ]
    assert all(not isinstance(m, AIMessage) for m in nova if m.content == "Teal, obviously.")


async def test_prompt_fits_the_token_budget_with_100k_stored_lines(open_test_app):
    async with open_test_app({"history": {"token_budget": 1500}}) as app:
        await app.service.handle(Inbound(KEY, "u1", "Ana", "first"))
        await app.service.wait_idle()
        async with app.db.transaction() as tx:
            now = time.time()
            await tx.execute_many(
                "INSERT INTO lines (channel_key, kind, author_id, author_name, text, created_at) VALUES (?, 'human', 'u1', 'Ana', ?, ?)",
                [(KEY, f"message number {i} " + "blah " * (i % 30), now) for i in range(100_000)],
            )
            await tx.execute(
                "INSERT INTO deliveries (channel_key, persona_id, line_id) "
                "SELECT ?, p.persona_id, l.id FROM lines l, participants p WHERE l.channel_key = ? AND p.channel_key = ? "
                "AND l.id > (SELECT MAX(line_id) FROM deliveries)",
                (KEY, KEY, KEY),
            )
        messages = await app.engine.prompt_for(KEY, "nova")
        assert prompt_tokens(messages) <= 1500
        assert len(messages) > 20  # the budget is used, not wasted
        assert messages[-1].content.startswith("Ana: message number 99999")


def test_a_prompt_fits_the_embedded_models_context_less_its_reply_and_any_budget_elsewhere():
    # The embedded model's window is known: 2048 tokens less a 96-token reply, less a tenth for the guess.
    assert prompt_budget(3000, 2048, 96) == 1756
    assert prompt_budget(1000, 2048, 96) == 1000  # a smaller [history] token_budget stays
    assert prompt_budget(3000, None, 96) == 3000  # a served model's window is not known
    assert prompt_budget(3000, 256, 200) == 200  # never below the least token_budget allows

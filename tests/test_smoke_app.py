from bot.inbound import Inbound


async def test_addressed_persona_replies_once(app, port):
    await app.service.handle(Inbound("console:t", "u1", "Ana", "Sage, are you there?"))
    await app.service.wait_idle()
    assert port.speakers() == ["sage"]

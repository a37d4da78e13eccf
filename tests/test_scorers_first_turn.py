"""The first-turn benchmark's scorer: a reply from a persona the line could expect, and nothing else, passes;
a notice, an empty reply, another persona first, or silence fails."""

from bench.scorers.first_turn import named, score_first_turn

PERSONAS = ["Nova", "Sage", "Rex"]


def test_a_reply_from_the_named_persona_passes() -> None:
    assert score_first_turn("Hello Nova, what should we launch next?", ["[Nova] A tiny app!"], PERSONAS).ok


def test_anyone_may_answer_a_line_that_names_nobody() -> None:
    shown = ["[Sage] Hello! What brings you here?", "[Rex] Hi. What do you need?"]
    assert score_first_turn("hi everyone!", shown, PERSONAS).ok


def test_a_skip_notice_fails_even_beside_a_reply() -> None:
    shown = ["[Nova] Hi there!", "[system] Sage could not answer (the reply was cut off) and was skipped."]
    assert not score_first_turn("hi everyone!", shown, PERSONAS).ok
    alone = ["[system] Sage could not answer (the model did not respond) and was skipped."]
    assert not score_first_turn("Sage, what do you think about remote work?", alone, PERSONAS).ok


def test_another_persona_answering_first_fails() -> None:
    result = score_first_turn("Rex, convince me that tabs beat spaces.", ["[Nova] Tabs are cute!"], PERSONAS)
    assert not result.ok and "Nova answered first" in result.why


def test_silence_an_empty_reply_or_an_approval_request_fails() -> None:
    assert not score_first_turn("hi everyone!", [], PERSONAS).ok
    assert not score_first_turn("hi everyone!", ["[Nova] "], PERSONAS).ok
    shown = ["[approval 3] Nova wants publish_post to #general: hi (expires 10:00)"]
    assert not score_first_turn("hi everyone!", shown, PERSONAS).ok


def test_names_are_found_as_whole_words_in_order() -> None:
    assert named("Sage, then @nova: which city?", PERSONAS) == ["Sage", "Nova"]
    assert named("Supernova sales are up", PERSONAS) == []

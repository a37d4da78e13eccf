"""The moderator benchmark's scorer: a round that ends in time with the named personas first, in order,
passes; a round that runs to its limit, puts someone else first, skips a turn or shows junk fails."""

from bench.scorers.moderator import FINISH, ROUND_IS_FULL, readable, score_round

REASONS = [("rex", "Rex was asked first"), ("nova", "Nova was asked next"), (FINISH, "the question is answered")]


def test_a_round_that_finishes_with_the_named_personas_first_in_order_passes() -> None:
    score = score_round(["rex", "nova"], REASONS, ["rex", "nova"], max_turns=6)
    assert score.ok and score.finished and not score.forced and score.addressed_first


def test_a_round_where_the_addressed_persona_did_not_speak_first_fails() -> None:
    score = score_round(["nova", "rex"], REASONS, ["rex", "nova"], max_turns=6)
    assert score.addressed_first is False and not score.ok


def test_both_named_but_in_the_wrong_order_fails() -> None:
    score = score_round(["nova", "rex", "sage"], REASONS, ["rex", "nova"], max_turns=6)
    assert not score.ok


def test_a_picked_persona_that_was_skipped_fails() -> None:
    notices = ["[system] Rex could not answer (the reply was cut off) and was skipped."]
    score = score_round(["nova"], REASONS, ["rex", "nova"], max_turns=6, notices=notices)
    assert score.skipped and score.addressed_first is False and not score.ok


def test_a_round_without_finish_or_at_its_limit_fails() -> None:
    picks = [("nova", "Nova adds a different view"), ("sage", "Sage adds a different view")]
    assert not score_round(["nova", "sage"], picks, [], max_turns=6).finished
    full = ["nova", "sage", "rex", "nova", "sage", "rex"]
    assert not score_round(full, [*picks, (FINISH, ROUND_IS_FULL)], [], max_turns=6).ok


def test_a_finish_forced_by_the_code_still_counts_but_is_told_apart() -> None:
    score = score_round(["sage", "rex", "nova"], [(FINISH, ROUND_IS_FULL)], [], max_turns=6)
    assert score.ok and score.forced


def test_reasons_in_plain_words_pass_and_junk_fails() -> None:
    assert readable("Sage was asked and has not spoken yet")
    for junk in ('{"next": "rex"}', "", "null", "<|im_end|>", "next_speaker=rex", "x" * 200, "!!!"):
        assert not readable(junk), junk
    score = score_round(["rex"], [("rex", "Rex was asked"), (FINISH, '{"reason": null}')], ["rex"], max_turns=6)
    assert score.unreadable == ['{"reason": null}'] and not score.ok

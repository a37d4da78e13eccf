"""Who speaks and when a round stops: the pure routing functions."""

import random

from graph.routing import (
    FINISH,
    FOLLOW_UP_TURNS,
    HAS_NOT_SPOKEN,
    ROUND_IS_FULL,
    WAS_ADDRESSED,
    ModeratorOptions,
    Speaker,
    addressed,
    after_draft,
    after_pick_and_turn,
    after_review,
    after_turn,
    check_moderator_pick,
    first_pick,
    moderator_options,
    natural_pick,
    speakers_for_unmoderated_round,
    too_many_failures,
)

NOVA = Speaker("nova", "Nova", 0.7)
SAGE = Speaker("sage", "Sage", 0.4)
REX = Speaker("rex", "Rex", 0.5)
ALL = [NOVA, SAGE, REX]


def test_addressed_in_mention_order_whole_words_any_case():
    assert addressed("REX and then nova, what now?", [], ALL) == ["rex", "nova"]
    assert addressed("novas and sages are not names; sage! is", [], ALL) == ["sage"]
    assert addressed("nobody here", [], ALL) == []


def test_platform_mentions_come_first_and_are_not_repeated():
    assert addressed("Nova, and Sage too", ["sage"], ALL) == ["sage", "nova"]
    assert addressed("hi", ["ghost"], ALL) == []


def test_natural_pick_is_reproducible_with_a_seed():
    picks = [natural_pick(ALL, None, random.Random(seed)) for seed in range(20)]
    again = [natural_pick(ALL, None, random.Random(seed)) for seed in range(20)]
    assert picks == again
    assert set(picks) == {"nova", "sage", "rex"}  # the rolls really vary with the seed


def test_natural_pick_never_lets_the_last_speaker_answer_itself():
    eager = [Speaker("nova", "Nova", 1.0), Speaker("sage", "Sage", 1.0)]
    for seed in range(50):
        assert natural_pick(eager, "nova", random.Random(seed)) == "sage"


def test_natural_pick_picks_one_at_random_when_nobody_wins_the_roll():
    shy = [Speaker("nova", "Nova", 0.001), Speaker("sage", "Sage", 0.001), Speaker("rex", "Rex", 0.001)]
    seen = {natural_pick(shy, "rex", random.Random(seed)) for seed in range(30)}
    assert seen == {"nova", "sage"}


def test_a_persona_that_listens_only_is_never_picked_and_chosen_only_when_named():
    listener = Speaker("pixel", "Pixel", 0.0)
    assert {natural_pick([listener, SAGE], None, random.Random(seed)) for seed in range(50)} == {"sage"}
    assert {natural_pick([listener, SAGE], "sage", random.Random(seed)) for seed in range(50)} == {"sage"}
    assert natural_pick([listener], None, random.Random(1)) is None
    assert speakers_for_unmoderated_round("Pixel, hello?", [], [listener, SAGE], None, random.Random(1)) == ["pixel"]
    assert "pixel" not in moderator_options([NOVA, listener], [], [], None, 0).choices
    assert moderator_options([NOVA, listener], ["pixel"], [], None, 0).choices == ("pixel",)


def test_talkativeness_decides_who_answers_an_unaddressed_line():
    chatty, quiet = Speaker("nova", "Nova", 0.9), Speaker("sage", "Sage", 0.1)
    picks = [natural_pick([chatty, quiet], None, random.Random(seed)) for seed in range(200)]
    assert picks.count("nova") > 3 * picks.count("sage") > 0


def test_an_unaddressed_line_gets_exactly_one_speaker_however_eager_they_are():
    eager = [Speaker("nova", "Nova", 1.0), Speaker("sage", "Sage", 1.0), Speaker("rex", "Rex", 1.0)]
    for seed in range(50):
        assert len(speakers_for_unmoderated_round("anyone?", [], eager, None, random.Random(seed))) == 1
        assert len(speakers_for_unmoderated_round("anyone?", [], ALL, "nova", random.Random(seed))) == 1
    assert speakers_for_unmoderated_round("anyone?", [], [], None, random.Random(1)) == []


def test_addressed_beats_natural_order():
    assert speakers_for_unmoderated_round("Rex?", [], ALL, "rex", random.Random(1)) == ["rex"]
    assert speakers_for_unmoderated_round("Rex and Sage?", [], ALL, None, random.Random(1)) == ["rex", "sage"]


# -- the moderator's options -------------------------------------------------------------------------


def options(addressed_ids=(), had_turn=(), last=None, turns=None, present=ALL) -> ModeratorOptions:
    return moderator_options(
        present, list(addressed_ids), list(had_turn), last, len(had_turn) if turns is None else turns
    )


def test_addressed_personas_are_forced_first_in_mention_order():
    assert options(["rex", "nova"]) == ModeratorOptions(("rex",), WAS_ADDRESSED)
    assert options(["rex", "nova"], ["rex"], "rex").forced == "nova"


def test_once_the_addressed_have_spoken_finish_is_offered_beside_the_others():
    offered = options(["rex"], ["rex"], "rex")
    assert offered.forced is None and offered.choices == ("nova", "sage", FINISH)


def test_with_nobody_addressed_everyone_speaks_before_finish_is_offered():
    first = options()
    assert first.forced is None and first.choices == ("nova", "sage", "rex") and not first.may_finish
    assert options(had_turn=["sage"], last="sage").choices == ("nova", "rex")
    assert options(had_turn=["sage", "nova"], last="nova") == ModeratorOptions(("rex",), HAS_NOT_SPOKEN)
    assert options(had_turn=["sage", "nova", "rex"], last="rex").choices == ("nova", "sage", FINISH)


def test_a_skipped_persona_has_had_its_turn():
    assert options(["rex"], had_turn=["rex"], last=None).may_finish


def test_finish_is_forced_after_the_follow_up_turns():
    follow_ups = ["nova", "sage"] * FOLLOW_UP_TURNS
    assert options(["rex"], ["rex", *follow_ups[: FOLLOW_UP_TURNS - 1]], "x").may_finish
    assert options(["rex"], ["rex", *follow_ups[:FOLLOW_UP_TURNS]], "x") == ModeratorOptions((FINISH,), ROUND_IS_FULL)
    assert options(had_turn=["nova", "sage", "rex"], last="rex", turns=3 + FOLLOW_UP_TURNS).forced == FINISH


def test_every_round_is_forced_to_finish_whatever_the_model_picks():
    """Any sequence of picks among the options reaches a forced FINISH within quorum + follow-ups."""
    for addressed_ids in ([], ["rex"], ["sage", "nova"]):
        for seed in range(20):
            rng, had_turn, last = random.Random(seed), [], None
            while True:
                offered = options(addressed_ids, had_turn, last)
                pick = offered.forced or rng.choice(offered.choices)
                if pick == FINISH:
                    break
                had_turn, last = [*had_turn, pick], pick
            assert len(had_turn) <= (len(addressed_ids) or 3) + FOLLOW_UP_TURNS
            assert set(addressed_ids) <= set(had_turn[: len(addressed_ids)])


def test_a_single_participant_needs_no_moderator():
    alone = [NOVA]
    assert options(present=alone).forced == "nova"
    assert options(had_turn=["nova"], last="nova", present=alone).forced == FINISH


def test_moderator_pick_validation():
    offered = options(["rex"], ["rex"], "rex")
    assert check_moderator_pick("Sage", ALL, offered) == ("sage", None)
    assert check_moderator_pick("finish", ALL, offered) == (FINISH, None)
    pick, error = check_moderator_pick("Bob", ALL, offered)
    assert pick is None and "not a participant" in error
    pick, error = check_moderator_pick("rex", ALL, offered)
    assert pick is None and "Rex may not speak now; choose one of Nova, Sage, FINISH" in error
    pick, error = check_moderator_pick("FINISH", ALL, options())
    assert pick is None and "not possible yet" in error


def test_unmoderated_round_never_returns_to_the_moderator():
    common = dict(turns_taken=1, max_turns=6, failures=0, planned_turns=2)
    assert after_turn(moderated=False, still_moderated=False, queue=["sage"], **common) == "persona"
    assert after_turn(moderated=False, still_moderated=False, queue=[], **common) == "end"
    assert after_turn(moderated=False, still_moderated=True, queue=[], **common) == "end"


def test_moderated_round_stops_at_max_turns_or_when_switched_off():
    assert (
        after_turn(
            moderated=True, still_moderated=True, queue=[], turns_taken=2, max_turns=6, failures=0, planned_turns=6
        )
        == "moderator"
    )
    assert (
        after_turn(
            moderated=True, still_moderated=True, queue=[], turns_taken=6, max_turns=6, failures=0, planned_turns=6
        )
        == "end"
    )
    assert (
        after_turn(
            moderated=True, still_moderated=False, queue=[], turns_taken=1, max_turns=6, failures=0, planned_turns=6
        )
        == "end"
    )


def test_round_stops_when_more_than_half_of_its_turns_failed():
    assert not too_many_failures(1, 3)
    assert too_many_failures(2, 3)
    assert not too_many_failures(3, 6)
    assert too_many_failures(4, 6)
    assert (
        after_turn(
            moderated=False,
            still_moderated=False,
            queue=["rex"],
            turns_taken=2,
            max_turns=6,
            failures=2,
            planned_turns=3,
        )
        == "end"
    )


def test_a_turn_reviews_a_draft_and_skips_a_failed_model_call():
    assert after_draft(turn_failed=False) == "review"
    assert after_draft(turn_failed=True) == "skip"


def test_after_review_asks_again_posts_or_skips():
    assert after_review(review_note="too short", turn_failed=False) == "persona"
    assert after_review(review_note="", turn_failed=False) == "deliver"
    assert after_review(review_note="", turn_failed=True) == "skip"


def test_a_step_that_picked_nobody_ends_the_round():
    assert after_pick_and_turn(False, "moderator") == "end"
    assert after_pick_and_turn(True, "moderator") == "moderator"
    assert after_pick_and_turn(True, "persona") == "persona"


def test_the_first_pick_is_the_moderators_in_a_moderated_round():
    assert first_pick(moderated=True) == "moderator"
    assert first_pick(moderated=False) == "select"

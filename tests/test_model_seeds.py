"""With a seed set, every extra attempt of the embedded model (a rewrite after review, a nudge after an
empty line) samples from a seed derived from it: a seeded run repeats call for call."""

from graph.models.seeds import SEED_RANGE, attempt_seed


def test_a_seeded_attempt_has_the_same_seed_every_run() -> None:
    assert attempt_seed(7, "nudge 1 after seed 7") == attempt_seed(7, "nudge 1 after seed 7")
    assert attempt_seed(7, "rewrite after review:human:Ana: hi") == attempt_seed(
        7, "rewrite after review:human:Ana: hi"
    )


def test_each_attempt_and_each_seed_samples_afresh() -> None:
    nudges = {attempt_seed(7, f"nudge {n} after seed 7") for n in (1, 2)}
    rewrites = {attempt_seed(7, f"rewrite after review:human:Ana: {text}") for text in ("hi", "hello")}
    assert len(nudges | rewrites | {7}) == 5  # none repeats another attempt's or the first call's seed
    assert attempt_seed(7, "nudge 1 after seed 7") != attempt_seed(8, "nudge 1 after seed 7")


def test_a_derived_seed_is_one_llama_cpp_takes() -> None:
    seeds = [attempt_seed(seed, f"nudge {n}") for seed in (0, 7, SEED_RANGE - 1) for n in range(50)]
    assert all(0 <= seed < SEED_RANGE for seed in seeds)


def test_unseeded_attempts_stay_random() -> None:
    assert len({attempt_seed(None, "nudge 1 after seed None") for _ in range(20)}) > 1

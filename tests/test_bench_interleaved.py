"""The engine benchmark's figures from interleaved runs: a median with its spread, never the best."""

import pytest

from bench.interleaved import Spread, run_medians, run_ratios, spread


def test_a_spread_is_the_median_run_with_the_lowest_and_highest_not_the_best():
    runs = [3.0, 1.0, 2.0, 5.0, 4.0]
    assert spread(runs) == Spread(median=3.0, low=1.0, high=5.0, runs=5)


def test_an_even_number_of_runs_takes_the_middle_of_the_two_central_ones():
    assert spread([1.0, 4.0, 2.0, 3.0]).median == 2.5


def test_each_ratio_pairs_a_run_with_the_peer_run_beside_it_in_time():
    # Drift doubled both sides' times in the second pair: the ratio stays, a ratio of pooled medians would not.
    assert run_ratios([2.0, 4.0, 3.0], [1.0, 2.0, 2.0]) == [2.0, 2.0, 1.5]


def test_runs_that_do_not_pair_up_are_refused():
    with pytest.raises(ValueError):
        run_ratios([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        run_ratios([], [])
    with pytest.raises(ValueError):
        run_ratios([1.0], [0.0])
    with pytest.raises(ValueError):
        spread([])


def test_each_run_counts_once_whatever_its_length():
    assert run_medians([[1.0, 9.0, 2.0], [5.0]]) == [2.0, 5.0]


def test_the_text_shows_median_then_spread_and_run_count_in_the_unit_asked():
    assert Spread(0.0021, 0.00195, 0.0024, 5).text(1e3, " ms") == "2.10 ms (1.95–2.40 ms, 5 runs)"

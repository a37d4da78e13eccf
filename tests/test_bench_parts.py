"""What the labelled-line benchmarks report: the median of their runs and the range, never the best one,
and no run at all when a part they were asked for is missing."""

import argparse

import pytest

from bench.parts import load_parts, parts_option, share, verdict


def test_several_runs_give_the_median_and_the_range_not_the_best() -> None:
    said = share([(10, 20), (19, 20), (12, 20)])
    assert said.startswith("median 60%") and "50%–95%" in said and "19/20" in said


def test_one_run_gives_its_count() -> None:
    assert share([(49, 50)]) == "49/50 = 98%"
    assert share([(0, 0)]) == "none to count"


def test_a_target_is_met_by_the_median_run_not_the_best() -> None:
    runs = {"dev": [(50, 50), (40, 50), (41, 50)]}
    assert verdict("≥ 98%", runs, lambda rate: rate >= 0.98) == "≥ 98% (dev missed)"


def test_a_missing_or_unknown_part_stops_the_run() -> None:
    with pytest.raises(SystemExit, match="held_out/no_such_set.jsonl"):
        load_parts("no_such_set", ("held_out",))
    with pytest.raises(argparse.ArgumentTypeError):
        parts_option("dev,heldout")
    assert parts_option("held_out,dev") == ("dev", "held_out")

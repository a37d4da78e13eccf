"""The engine benchmark's in-memory side writes no file (AutoGen's side: tests/test_bench_autogen.py)."""

from pathlib import Path

from bench.harness import bench_app
from bench.model_double import DoubleModels, ModelDouble
from bench.phases import MODERATED, CallTally, moderated_round


async def test_the_in_memory_side_answers_rounds_and_writes_no_database_file(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # bench_app's data directory lands here
    double = ModelDouble(cost=0.0)
    async with bench_app(DoubleModels(double), MODERATED, in_memory=True) as bench:
        await moderated_round(bench, "console:pairing", 0, CallTally())
        written = [path.name for path in tmp_path.rglob("*") if path.is_file() and ".sqlite" in path.name]
    assert double.replies == 3 and double.calls >= 6
    assert written == []

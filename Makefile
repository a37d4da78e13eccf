VENV   ?= .venv
PYTHON ?= python3
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# The storage tests start a throwaway PostgreSQL server; its binaries come from Debian's package.
PG_INITDB := $(wildcard /usr/lib/postgresql/*/bin/initdb)
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test bench clean postgres-server

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m bot

test: $(STAMP) postgres-server
	$(BIN)/python -m pytest

postgres-server:
ifeq ($(PG_INITDB),)
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends postgresql
endif

bench: $(STAMP)
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/local_model.py
	$(BIN)/python bench/actions.py
	$(BIN)/python bench/first_turn.py

clean:
	rm -rf $(VENV) .pytest_cache

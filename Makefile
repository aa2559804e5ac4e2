# batonflow developer commands. Each target creates/uses its own virtualenv in .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: install demo test lint typecheck pytest bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed

# The demo installs only what it uses (the demo extra), not the developer tools of [dev].
$(VENV)/.demo-installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q -e '.[demo]'
	touch $@

demo: $(VENV)/.demo-installed
	$(VENV)/bin/batonflow demo

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: install
	$(VENV)/bin/mypy

pytest: install
	$(VENV)/bin/pytest -q --cov=batonflow.core --cov-branch --cov-report=term:skip-covered

test: lint typecheck pytest

bench: install
	$(PIP) install -q -r bench/requirements.txt
	$(PY) bench/run.py
	$(PY) bench/journal_bench.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache

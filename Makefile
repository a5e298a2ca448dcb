# The two commands of the README:  `make run`  and  `make test`.
# Each creates the virtual environment it needs (.venv) on first use.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.run-deps: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.test-deps: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test]"
	touch $@

run: $(VENV)/.run-deps
	$(BIN)/python serve.py

lint: $(VENV)/.test-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: lint
	$(BIN)/pytest

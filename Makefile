# Two entry points: `make run` (the app with demo data on SQLite, tasks in-process)
# and `make test` (everything the tests need, then all of them).
SHELL := /bin/bash
# Django 6 needs Python >= 3.12; the machine's default python3 is 3.11, so find 3.12
# (pyenv keeps it beside the default, where `python3.12` alone may not resolve).
PYTHON ?= $(shell for p in python3.12 python3.13 $$HOME/.pyenv/versions/3.12*/bin/python3.12 /usr/bin/python3.12; do \
	$$p -c 'import sys; assert sys.version_info >= (3, 12)' >/dev/null 2>&1 && { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

POSTGRES_URL ?= postgres://postgres@127.0.0.1:5432/contracteval

.PHONY: run test test-postgres install install-dev static lint bench results suite clean-venv

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "Python >= 3.12 not found (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed static

install-dev: install

# Vendored front-end libraries come from npm at build time and are served as static files.
static: static/vendor/.installed

static/vendor/.installed: package.json
	npm install --no-audit --no-fund --silent
	$(BIN)/python scripts/vendor_static.py
	touch $@

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py load_demo
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

# mypy checks matching/, audit/ and the settings ([tool.mypy] in pyproject.toml), the
# Django code with the django-stubs and DRF plugins.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: install lint
	$(BIN)/pytest

# The database-backed tests (web, worker, browser) again on PostgreSQL.
test-postgres: install
	DATABASE_URL=$(POSTGRES_URL) $(BIN)/pytest tests/web tests/browser

bench: install
	$(BIN)/contracteval bench

suite: install
	$(BIN)/python -m fixtures.authoring.build
	$(BIN)/contracteval perturb fixtures/clean --out fixtures/suite --seed 0

results: install
	$(BIN)/python scripts/results.py

clean-venv:
	rm -rf $(VENV)

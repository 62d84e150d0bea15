# corebox: `make run` serves with the embedded defaults; `make test` runs everything CI checks.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.PHONY: run test lint types unit check-runtime-contract binary smoke bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(STAMP_RUN)

run: $(STAMP_RUN)
	$(BIN)/corebox serve

lint: $(STAMP_DEV)
	$(BIN)/ruff check allinone runtime storage tests examples build
	$(BIN)/ruff format --check allinone runtime storage tests examples build

types: $(STAMP_DEV)
	$(BIN)/mypy

unit: $(STAMP_DEV)
	$(BIN)/python -m pytest -q -m "not binary"

# Seed 000 contract verification: the shared wire validators (tests/runtime/proto), the
# gateway, transport and dispatcher tests, and every wire scenario replayed on both sides
# (tests/contract: Core gateway vs a scripted Runtime, Runtime daemon vs a scripted Core),
# each listed by scenario name.
check-runtime-contract: $(STAMP_DEV)
	$(BIN)/python -m pytest -q tests/runtime tests/allinone/core/gateway
	$(BIN)/python -m pytest -v tests/contract

binary: $(STAMP_DEV)
	$(BIN)/python build/build.py

smoke: binary
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python -m pytest -q -m binary tests/e2e

test: lint types unit check-runtime-contract smoke

bench: binary
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python tests/bench/bench.py
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python tests/bench/bench_durable.py
	$(BIN)/python tests/bench/bench_wire.py
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python tests/bench/bench_comms.py
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python tests/bench/bench_builtin.py

clean:
	rm -rf $(VENV) dist build/work

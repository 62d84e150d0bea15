# corebox: `make run` serves with the embedded defaults; `make test` runs everything CI checks.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.PHONY: run test lint types unit system-deps check-runtime-contract binary smoke bench schema clean

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

# The unit suite under coverage, subprocesses included (pyproject.toml), then the floors:
# the whole, the wire protocol and storage may not fall below these percentages.
COVERAGE := COVERAGE_FILE=$(CURDIR)/build/work/coverage/.coverage $(BIN)/python -m coverage
FLOOR_TOTAL := 91
FLOOR_PROTO := 98
FLOOR_STORAGE := 96

# Bubblewrap is the confinement fallback where Landlock is missing; its test runs the real
# one, installed from Debian's packages when this is a root shell with apt-get. Chromium
# runs the console's tests (tests/allinone/console), installed the same way. PostgreSQL's
# server binaries (Debian keeps them in /usr/lib/postgresql/NN/bin) run the throw-away
# cluster the storage and API suites use for the PostgreSQL backend (tests/support/postgres.py).
system-deps:
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; } \
	  || echo "bubblewrap is not installed: its confinement test will be skipped"
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } \
	  || echo "chromium is not installed: the console's browser tests will be skipped"
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null \
	  || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq \
	  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } \
	  || echo "postgresql is not installed: the PostgreSQL backend's tests will be skipped"

# The storage suite (tests/storage) runs on both backends in the first pass. The second
# pass runs the API files that exercise the most storage (a real `corebox serve` on a
# fresh PostgreSQL database each): running the whole API suite twice would not fit CI's
# time; `COREBOX_TEST_BACKEND=postgresql pytest tests/api` runs all of it (and passes).
# The last two lines' files are cheap ones (about 40 s together on a busy machine); `corebox
# status` is among them because a server on PostgreSQL names its Runtime per host, and the
# overlays because clearing a pause kill switch finds the turns it paused by one query.
PG_API_TESTS := tests/api/test_sessions.py tests/api/test_turns.py \
	tests/api/test_run_control.py tests/api/test_recovery.py tests/api/test_reclaim.py \
	tests/api/test_event_streams.py tests/api/test_files.py tests/api/test_automations.py \
	tests/api/test_drain.py tests/api/test_forks.py tests/api/test_vaults.py \
	tests/api/test_agents.py tests/api/test_auth.py tests/api/test_conformance.py \
	tests/api/test_tool_catalog.py tests/api/test_audit_controls.py tests/allinone/test_status.py \
	tests/api/test_overlays.py

# The wire protocol's contract suites run once, under coverage, as part of this target
# (check-runtime-contract below, with the coverage runner), not a second time after it.
unit: $(STAMP_DEV) system-deps
	rm -rf build/work/coverage && mkdir -p build/work/coverage
	$(COVERAGE) run -m pytest -q -m "not binary" $(CONTRACT_SUITES:%=--ignore=%)
	$(MAKE) --no-print-directory check-runtime-contract PYTEST="$(COVERAGE) run -m pytest"
	COREBOX_TEST_BACKEND=postgresql $(COVERAGE) run -m pytest -q -m "not binary" $(PG_API_TESTS)
	$(COVERAGE) combine -q
	$(COVERAGE) report --format=total --fail-under=$(FLOOR_TOTAL)
	$(COVERAGE) report --format=total --include='runtime/proto/*' --fail-under=$(FLOOR_PROTO)
	$(COVERAGE) report --format=total --include='storage/*' --fail-under=$(FLOOR_STORAGE)

# Seed 000 contract verification: the shared wire validators (tests/runtime/proto), the
# gateway, transport and dispatcher tests, and every wire scenario replayed on both sides
# (tests/contract: Core gateway vs a scripted Runtime, Runtime daemon vs a scripted Core),
# each listed by scenario name.
CONTRACT_SUITES := tests/runtime tests/allinone/core/gateway tests/contract
PYTEST ?= $(BIN)/python -m pytest
check-runtime-contract: $(STAMP_DEV)
	$(PYTEST) -q tests/runtime tests/allinone/core/gateway
	$(PYTEST) -v tests/contract

binary: $(STAMP_DEV)
	$(BIN)/python build/build.py

smoke: binary
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python -m pytest -q -m binary tests/e2e

test: lint types unit smoke

bench: binary
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python tests/bench/bench.py
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python tests/bench/bench_durable.py
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python tests/bench/bench_bytes.py
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python tests/bench/bench_scale.py
	$(BIN)/python tests/bench/bench_wire.py
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python tests/bench/bench_comms.py
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python tests/bench/bench_builtin.py
	$(BIN)/python tests/bench/bench_snapshots.py
	$(BIN)/python tests/bench/bench_checkpoint.py
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python tests/bench/bench_cluster.py
	COREBOX_BINARY=$(CURDIR)/dist/corebox $(BIN)/python tests/bench/bench_postgres.py

# A new database starts from storage/migrations/schema.sql; rewrite it after adding a migration.
schema: $(STAMP_DEV)
	$(BIN)/python -c "from storage import migrations as m; m.SNAPSHOT.write_text(m.snapshot(), encoding='utf-8')"

clean:
	rm -rf $(VENV) dist build/work

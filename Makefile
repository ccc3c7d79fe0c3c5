# The README's two set-up commands are `make demo` and `make test`; both build the venv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# One venv, one stamp per install level: `make demo` installs only what `pip install memstrata`
# gives; `make test` adds the `test` extra; lint and typecheck add the `dev` tools.
RUNTIME := $(VENV)/.installed-runtime
TESTS := $(VENV)/.installed-test
DEV := $(VENV)/.installed-dev

.PHONY: demo test fuzz lint typecheck bench bench-quick clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# An editable install leaves our modules uncompiled; where PYTHONDONTWRITEBYTECODE is set
# (CI, containers) every CLI call would recompile them (~0.25 s). compileall does what pip
# does for a wheel.
COMPILE := $(BIN)/python -m compileall -q src >/dev/null

$(RUNTIME): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e .
	$(COMPILE)
	touch $@

$(TESTS): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(COMPILE)
	touch $@ $(RUNTIME)

$(DEV): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@ $(TESTS) $(RUNTIME)

demo: $(RUNTIME)
	$(BIN)/memstrata demo

# The suite runs on TEST_WORKERS pytest-xdist processes (each starts its own PostgreSQL and
# Redis: tests/servers.py). Many tests wait on a server or a subprocess, so 4 workers beat 2
# even on 2 cores (docs/measurements.md, session 34). `make test TEST_WORKERS=0` runs it in
# one process, as before.
TEST_WORKERS ?= 4
test: $(TESTS)
	bash .ci/install-browser  # Debian's chromium for the web inspector's browser test
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --durations=25  # the slowest tests, for whoever plans the next speed-up

# The property tests (every module that imports hypothesis) randomised with FUZZ times their
# examples (tests/conftest.py's `fuzz` profile), under one seed printed first: `make fuzz
# SEED=<n>` draws the same examples again. CI's `make test` stays derandomised. Nightly.
FUZZ ?= 10
fuzz: $(TESTS)
	@seed=$(SEED); seed=$${seed:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; \
	echo "make fuzz: FUZZ=$(FUZZ) SEED=$$seed"; \
	MEMSTRATA_FUZZ=$(FUZZ) $(BIN)/python -m pytest --hypothesis-seed=$$seed --durations=10 \
		$$(grep -rlE '^(from|import) hypothesis' tests | sort)

lint: $(DEV)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: $(DEV)
	$(BIN)/mypy src

bench: $(TESTS)
	$(BIN)/memstrata bench locomo
	$(BIN)/memstrata bench scale

clean:
	rm -rf $(VENV) build dist src/*.egg-info

# Everything starts from nothing: `make demo` and `make test` create .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo lint test test-heavy test-fast fuzz bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || { echo "dltrace needs Python 3.10 or newer"; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dltrace demo

lint: $(STAMP)
	$(BIN)/ruff check

# every test but the heavy ones (many JVMs, benchmarks end to end: make test-heavy)
test: lint
	$(BIN)/python -m pytest -q -m "not heavy" --durations=15

test-heavy: $(STAMP)
	$(BIN)/python -m pytest -q -m heavy

# what needs no JVM, in seconds: the rule fixtures, the golden SQL, the doctests, the unit
# tests (tests/conftest.py: a test that starts a JVM fails here; mark it spark)
test-fast: $(STAMP)
	DLTRACE_NO_JVM=1 DLTRACE_FUZZ_SCALE=0.2 $(BIN)/python -m pytest -q -m "not spark and not slow"

# the fuzzed front door with 20 times the cases `make test` runs, then 5,000 generated valid
# queries in two worker processes (tests/fuzz_queries.py: progress on stderr, counts by
# outcome and every failure at the end)
fuzz: $(STAMP)
	DLTRACE_FUZZ_SCALE=20 $(BIN)/python -m pytest -q tests/test_fuzz.py
	$(BIN)/python -m tests.fuzz_queries --queries 5000 --jobs 2

bench: $(STAMP)
	$(BIN)/python -m tpch bench --sf 1 --out bench-results/tpch
	$(BIN)/python -m walmart bench --scale 1 --out bench-results/walmart

clean:
	rm -rf $(VENV) .dltrace data bench-results

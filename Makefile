# Every target bootstraps .venv from nothing (Python >= 3.11 on PATH as python3).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast bench lint clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "finmcp needs Python >= 3.11")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/finmcp-eval demo

test: $(STAMP)
	$(BIN)/python -m pytest -q --durations=25  # the slowest tests, for the 15-minute budget

# the inner loop: everything but the tests marked slow (soak, crash, whole-benchmark rebuilds)
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

# the bench extra: peers measured beside finmcp in the same run (mcp-recorder's replay server)
$(VENV)/.bench-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	touch $@

bench: $(VENV)/.bench-installed
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache

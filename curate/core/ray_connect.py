"""Starting or joining Ray from this process without Ray taking over the terminal or the signals.

- :func:`_connect`: ``ray.init`` as a client of a cluster, its refusal (token authentication) as one line.
- :class:`RayOutput`: where Ray's own output goes while curate drives it (its start-up notices, its Python
  loggers, the raylet's messages): a log file (a run's ``ray.log``), not the terminal; the few notices that
  matter to the user are said once, in curate's words. The workers' stdout and stderr are not forwarded
  (``ray.init(log_to_driver=False)``): they stay in the Ray session's log folder, which the log file names.
  ``curate -v`` (logging at INFO) leaves all of it on the terminal, as Ray prints it.
- :func:`keep_sigterm_handler`: ``ray.init`` replaces the process's SIGTERM handler; a caller's own (the
  CLI's, which turns SIGTERM into Ctrl-C's path) is kept.

Takes the ``ray`` module as an argument: :mod:`curate.core.ray_engine` stays the one module that imports it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from curate.core.engine_base import EngineError

log = logging.getLogger(__name__)


def _connect(ray: Any, address: str, kwargs: dict[str, Any]) -> None:
    """``ray.init`` as a client of the cluster at ``address``, turning an auth refusal into one line."""
    try:
        try:
            ray.init(address=address, **kwargs)
        except ConnectionError as e:  # Ray 2.60 wraps the refusal: ConnectionError from AuthenticationError
            refusal = _auth_refusal(ray, e)
            if refusal is None:
                raise EngineError(
                    f"cannot connect to the Ray cluster at {address} ({' '.join(str(e).split())}); check "
                    "--address / RAY_ADDRESS and that the cluster is up (`ray status` on the head)"
                ) from None
            raise refusal from None
    except ray.exceptions.AuthenticationError:
        mode = os.environ.get("RAY_AUTH_MODE", "")
        if mode != "token":
            fix = (
                f"RAY_AUTH_MODE is {mode or 'unset'}: set RAY_AUTH_MODE=token and the cluster's token "
                "(RAY_AUTH_TOKEN_PATH=FILE or RAY_AUTH_TOKEN; `ray get-auth-token` on the head prints it)"
            )
        else:
            fix = "this client's token is not the cluster's: set RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN to it"
        raise EngineError(
            f"the Ray cluster at {address} requires token authentication (on by default since Ray 2.60); "
            f"{fix}. See docs/cluster.md"
        ) from None


def _auth_refusal(ray: Any, e: BaseException) -> BaseException | None:
    """Ray's authentication refusal, when ``e`` or an exception ``e`` was raised from is one, or carries
    one as text (Ray's GCS client reports its last connection error as a formatted traceback)."""
    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, ray.exceptions.AuthenticationError):
            return seen
        if "InvalidAuthToken" in str(seen) or "AuthenticationError" in str(seen):
            return ray.exceptions.AuthenticationError(str(seen))
        seen = seen.__cause__ or seen.__context__
    return None


# Ray's notices that change what the user should do, each said once in our words (the rest stays in the log).
NOTICES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (
        re.compile(r"object store is using (\S+) instead of /dev/shm because /dev/shm has only (\d+) bytes"),
        lambda m: (
            f"Ray keeps its objects on disk in {m[1]}: /dev/shm has only {int(m[2]) / 1e9:.1f} GB free, "
            "so the run is slower; free /dev/shm or make it larger (docker run --shm-size=...)"
        ),
    ),
    (
        re.compile(r"File descriptor limit (\d+) is too low"),
        lambda m: (
            f"this process may open only {m[1]} files, too few for Ray's connections to its workers; "
            "raise the limit (ulimit -n 8192) before the run"
        ),
    ),
    (
        re.compile(r"running low on memory|OutOfMemoryError|killed due to .*memory"),
        lambda m: (
            "Ray stopped a worker because this machine ran low on memory; its work is retried. Fewer "
            "workers (engine.num_cpus in the pipeline) or more memory avoid it"
        ),
    ),
)


class RayOutput:
    """Ray's own output, in a log file while curate drives Ray; see the module docstring.

    ``path``: the log file (appended to); None puts it in the Ray session's log folder
    (``curate-driver.log``) once Ray has started. Use :meth:`starting` around ``ray.init``, then
    :meth:`attach` after it and :meth:`detach` after ``ray.shutdown``.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.verbose = logging.getLogger().isEnabledFor(logging.INFO)  # curate -v: Ray prints as it does
        self.path = Path(path) if path is not None else None
        self._temporary = False
        self._said: set[int] = set()
        self._handler: logging.Handler | None = None
        self._undo: list[Callable[[], None]] = []

    @property
    def log_to_driver(self) -> bool:
        """``ray.init(log_to_driver=...)``: the workers' output forwarded to this terminal only with -v."""
        return self.verbose

    @contextlib.contextmanager
    def starting(self) -> Iterator[None]:
        """This process's stdout and stderr (file descriptors, so Ray's C++ logs too) into the log file
        while Ray starts: the token-auth warning, "Failed to determine local IP" inside a network
        namespace, and the like; then its notices that matter, once."""
        if self.verbose:
            yield
            return
        if self.path is None:
            fd, name = tempfile.mkstemp(prefix="curate-ray-", suffix=".log")
            os.close(fd)
            self.path, self._temporary = Path(name), True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        start = self.path.stat().st_size if self.path.exists() else 0
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        try:
            with open(self.path, "ab") as log_file:
                os.dup2(log_file.fileno(), 1)
                os.dup2(log_file.fileno(), 2)
                try:
                    yield
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os.dup2(saved[0], 1)
                    os.dup2(saved[1], 2)
        finally:
            for fd in saved:
                os.close(fd)
        with open(self.path, errors="replace") as f:
            f.seek(start)
            for line in f:
                self.notice(line)

    def attach(self, ray: Any, *, cluster: bool) -> None:
        """After ``ray.init``: Ray's Python loggers and the raylet's messages go to the log file, and the
        file says where the workers' output is (the session's ``logs/worker-*.out`` / ``.err``)."""
        if self.verbose:
            return
        logs = _session_logs(ray)
        if self._temporary and logs is not None and self.path is not None:
            moved = logs / "curate-driver.log"
            with contextlib.suppress(OSError):
                moved.write_bytes(self.path.read_bytes())
                self.path.unlink()
                self.path, self._temporary = moved, False
        assert self.path is not None
        where = (
            f"Ray session logs: {logs}"
            if logs is not None
            else "Ray session logs: in the Ray session folder of each node (/tmp/ray/session_latest/logs)"
        )
        with open(self.path, "a") as f:
            f.write(
                f"{where}; the workers' output (print, warnings, tracebacks) is in worker-*.out and "
                f"worker-*.err there{' and on every other node' if cluster else ''}, not forwarded to the "
                "terminal (curate -v forwards it)\n"
            )
        log.info("Ray's messages: %s (%s)", self.path, where)
        self._handler = _NoticingFileHandler(self.path, self)
        self._handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        for logger in _ray_loggers():
            for h in list(logger.handlers):
                if _is_terminal(h):
                    logger.removeHandler(h)
                    logger.addHandler(self._handler)
                    self._undo.append(functools.partial(_swap_back, logger, self._handler, h))
        self._route_raylet_messages(ray)

    def _route_raylet_messages(self, ray: Any) -> None:
        """The raylet's messages to the driver (a worker killed, out of memory, too many workers started)
        are printed by Ray's error-listener thread, in colour, whatever ``log_to_driver`` says; they go to
        the log file instead, through Ray's logger."""
        worker = getattr(getattr(ray, "_private", None), "worker", None)
        original = getattr(worker, "print_to_stdstream", None)
        if worker is None or original is None:
            return
        ray_log = logging.getLogger("ray")

        def to_log(data: dict[str, Any], ignore_prefix: bool = False) -> None:
            for line in data.get("lines", []):
                ray_log.warning("(%s) %s", data.get("pid", "ray"), line)

        worker.print_to_stdstream = to_log
        self._undo.append(lambda: setattr(worker, "print_to_stdstream", original))

    def notice(self, text: str) -> None:
        """Say a notice of :data:`NOTICES` that ``text`` holds, once per engine, in curate's words."""
        for i, (pattern, words) in enumerate(NOTICES):
            m = pattern.search(text)
            if m and i not in self._said:
                self._said.add(i)
                log.warning("%s (Ray's own words: %s)", words(m), self.path)

    def detach(self) -> None:
        """Put Ray's loggers and its message printer back (after ``ray.shutdown``)."""
        while self._undo:
            self._undo.pop()()
        if self._handler is not None:
            self._handler.close()
            self._handler = None


class _NoticingFileHandler(logging.FileHandler):
    """A file handler for Ray's loggers that also says the notices that matter (:meth:`RayOutput.notice`)."""

    def __init__(self, path: Path, output: RayOutput) -> None:
        super().__init__(path, encoding="utf-8")
        self.output = output

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        with contextlib.suppress(Exception):
            self.output.notice(record.getMessage())


def _ray_loggers() -> list[logging.Logger]:
    """``ray`` and every ``ray.*`` logger made so far (``ray.data`` has handlers of its own)."""
    names = [n for n in logging.Logger.manager.loggerDict if n == "ray" or n.startswith("ray.")]
    return [logging.getLogger(n) for n in sorted(names)]


def _is_terminal(handler: logging.Handler) -> bool:
    """A handler that writes to this process's stdout or stderr (Ray's ``PlainRayHandler`` and the like)."""
    stream = getattr(handler, "stream", None)
    if isinstance(handler, logging.FileHandler) or stream is None:
        return False
    return stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)


def _swap_back(logger: logging.Logger, ours: logging.Handler, theirs: logging.Handler) -> None:
    logger.removeHandler(ours)
    logger.addHandler(theirs)


def _session_logs(ray: Any) -> Path | None:
    """The ``logs`` folder of this process's Ray session (None when unknown, e.g. a Ray Client)."""
    node = getattr(getattr(getattr(ray, "_private", None), "worker", None), "_global_node", None)
    try:
        return Path(node.get_logs_dir_path()) if node is not None else None
    except Exception:
        return None


@contextlib.contextmanager
def keep_sigterm_handler(ray: Any) -> Iterator[None]:
    """Keep the process's SIGTERM handler through ``ray.init``, when the caller set one of its own.

    ``ray.init`` installs its own (``sys.exit``), and the driver's core worker a C++ failure handler that
    prints a stack dump (``*** SIGTERM received ... PC: @``) before it exits. The CLI's handler turns
    SIGTERM into KeyboardInterrupt (Ctrl-C's path: lock released, engine shut down, how to resume), so
    Ray's Python handler is not installed while this holds, and the caller's is put back after (which
    also removes the C++ one). A process with no handler of its own (SIG_DFL) keeps Ray's, as before.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.getsignal(signal.SIGTERM)
    if not callable(handler):
        yield
        return
    utils: Any = getattr(getattr(ray, "_private", None), "utils", None)
    install = getattr(utils, "set_sigterm_handler", None)
    if install is not None:
        utils.set_sigterm_handler = lambda _handler: None
    try:
        yield
    finally:
        if install is not None:
            utils.set_sigterm_handler = install
        signal.signal(signal.SIGTERM, handler)

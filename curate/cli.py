"""The ``curate`` command line. Subpackages add verbs through ``curate/<pkg>/cli.py:register(subparsers)``;
:func:`build_parser` imports each of them by name, and ``curate run`` hands the runner the phases the root
composes (``curate.compose.PHASES``)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shlex
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from curate.runtime.versions import __version__

RUN_EXAMPLE = """example:
  curate run pipelines/demo.yaml --output runs/demo
  curate run pipelines/web.yaml --input '../shared/corpora/web/*.jsonl.gz' --output runs/web \\
      --set stages.0.params.form=NFKC
  RAY_ADDRESS=127.0.0.1:6379 curate run pipelines/web.yaml --output /shared/runs/web   # on a cluster
"""
INSPECT_EXAMPLE = """example:
  curate inspect runs/demo
  curate inspect runs/demo --reason exact_dedup_v1:duplicate --n 3
  curate inspect runs/demo --reason short_doc --seed 1     # short reason; a stage, quarantine, kept work too
"""


def _run(args: argparse.Namespace) -> int:
    from curate.compose import PHASES
    from curate.pipeline.config import load_pipeline
    from curate.runtime.runner import run_pipeline

    overrides = list(args.set or [])
    if args.input:
        overrides.append(f"input.path={args.input}")
    cfg = load_pipeline(args.pipeline, overrides)
    if args.address:
        cfg.engine.address = args.address
        cfg.engine.kind = "ray"
    if args.engine:
        cfg.engine.kind = args.engine
    out = args.output or (cfg.raw.get("output") or {}).get("dir") or f"runs/{cfg.name}"
    if not args.quiet:
        _print_estimate(cfg, phases=not args.no_phases)
    phases = () if args.no_phases else PHASES
    manifest = run_pipeline(cfg, out, progress=not args.quiet, phases=phases, restart=args.restart)
    if not args.quiet and not sys.stderr.isatty():
        # A closed bar erases itself with "\r" and spaces but ends no line: in a log that holds both
        # streams the summary's first line would run into it.
        print(file=sys.stderr, flush=True)
    from curate.verbs.summary import format_run_summary

    print(format_run_summary(manifest, out))
    return 0


def _print_estimate(cfg: Any, *, phases: bool) -> None:
    """What the run will cost here, before it starts (``curate plan PIPELINE`` prints the same): the
    curation and the proxy phase, CPU-seconds and wall time, with the settings that drive them. An input
    the estimate cannot read is the run's to report: the estimate then says it is not available."""
    from curate.plan.estimate import estimate_run, format_estimate

    try:
        text = format_estimate(estimate_run(cfg, proxy=phases))
    except Exception as e:  # the run itself checks its input and says what is wrong
        text = f"estimate: not available ({type(e).__name__}: {e})"
    print(text, file=sys.stderr, flush=True)


def _inspect(args: argparse.Namespace) -> int:
    from curate.verbs.summary import inspect_run

    print(inspect_run(Path(args.run_dir), reason=args.reason, n=args.n, width=args.width, seed=args.seed))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="curate", description="Curate LLM pre-training data and measure its goodput."
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="log at INFO level; show Ray's own output (start-up, workers' lines) and libraries' warnings",
    )
    parser.add_argument("--version", action="version", version=f"curate {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True

    run = sub.add_parser(
        "run", help="run a pipeline", epilog=RUN_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    run.add_argument("pipeline", help="pipeline YAML (see pipelines/)")
    run.add_argument("--input", help="input path or glob (overrides input.path)")
    run.add_argument("--output", help="run directory (default runs/<name>); a rerun there resumes")
    run.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override a config key by dotted path"
    )
    run.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else an embedded runtime)")
    run.add_argument(
        "--engine", choices=["ray", "inline"], help="execution engine (default from the pipeline: ray)"
    )
    run.add_argument("--no-phases", action="store_true", help="skip proxy runs, report and export")
    run.add_argument(
        "--restart",
        action="store_true",
        help="discard what an earlier run wrote into --output and start over (a rerun without it resumes)",
    )
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    run.set_defaults(func=_run)

    ins = sub.add_parser(
        "inspect",
        help="show what a run kept and removed, and why",
        epilog=INSPECT_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ins.add_argument("run_dir")
    ins.add_argument(
        "--reason",
        help="only this: a reason (short_doc or gopher_quality_v1:short_doc), a stage, quarantine or kept",
    )
    ins.add_argument("--n", type=int, default=2, help="sample documents per reason (default 2)")
    ins.add_argument("--seed", type=int, default=0, help="seed of the random sample (default 0)")
    ins.add_argument("--width", type=int, default=300, help="characters shown per sample")
    ins.set_defaults(func=_inspect)

    # The verbs of the packages, in the order help lists them; imported here, not at module level, so
    # `import curate.cli` stays light (main enters the network namespace before any import starts a thread).
    from curate.export import cli as export_verbs
    from curate.plan import cli as plan_verbs
    from curate.proxy import cli as proxy_verbs
    from curate.proxy import mixcli
    from curate.report import cli as report_verbs
    from curate.scorers import cli as scorers_verbs
    from curate.verbs import reselect

    for verbs in (reselect, proxy_verbs, scorers_verbs, export_verbs, report_verbs, plan_verbs, mixcli):
        verbs.register(sub)
    proxy = sub.choices["proxy"]
    proxy.set_defaults(func=_then_report(proxy.get_default("func")))
    for verb in RUN_DIR_VERBS:
        if verb in sub.choices:
            sub.choices[verb].set_defaults(func=_mirrored(sub.choices[verb].get_default("func")))
    return parser


RUN_DIR_VERBS = ("inspect", "export", "report", "proxy", "select")  # verbs whose RUN_DIR may be a bucket URL


def _mirrored(handler: Any) -> Any:
    """A verb on a run directory in object storage works on a local mirror of it, then uploads what it
    wrote (``curate.io.stage.Mirror``); a local RUN_DIR is passed through as a ``Path``."""

    def run(args: argparse.Namespace) -> int:
        from curate.io.stage import Mirror, show_url
        from curate.io.storage import Location, is_remote, redact

        if not is_remote(str(args.run_dir)):
            args.run_dir = Path(args.run_dir)
            return int(handler(args) or 0)
        url = str(args.run_dir)
        mirror = Mirror(Location.of(url))
        args.run_dir = mirror.pull()
        if not (args.run_dir / "manifest.json").exists():
            raise FileNotFoundError(f"{redact(url)}: no run here (no manifest.json); give a run directory")
        out, sys.stdout = sys.stdout, _ShowUrl(sys.stdout, url)
        try:
            code = int(handler(args) or 0)
        except Exception as e:  # the message names the URL, not the local mirror
            shown = show_url(str(e), url)
            if shown == str(e):
                raise
            try:
                renamed = type(e)(shown)
            except Exception:
                raise e from None
            raise renamed from None
        finally:
            sys.stdout = out
        if code == 0:
            mirror.push()
        return code

    return run


class _ShowUrl:
    """A stdout that writes the local mirror of ``url`` as the URL (``curate.io.stage.show_url``)."""

    def __init__(self, stream: Any, url: str) -> None:
        self.stream, self.url = stream, url

    def write(self, text: str) -> int:
        from curate.io.stage import show_url

        return self.stream.write(show_url(text, self.url))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _then_report(proxy_handler: Any) -> Any:
    """``curate proxy`` ends as a run does: the report rebuilt with the new goodput, its verdict card (one
    line each), then the report's path.

    The proxy verb's own output is kept except the raw JSON record it starts with (the same numbers are
    in goodput.json and in the table it prints after it).
    """

    def handler(args: argparse.Namespace) -> int:
        import contextlib
        import io
        import json

        from curate.report.build import build_report_with_headline

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = int(proxy_handler(args) or 0)
        text = buf.getvalue()
        if text.lstrip().startswith("{"):
            with contextlib.suppress(ValueError):
                _, end = json.JSONDecoder().raw_decode(text.lstrip())
                text = text.lstrip()[end:].lstrip("\n")
        print(text, end="")
        if code == 0:
            (html_path, _), card = build_report_with_headline(Path(args.run_dir))
            print(card)  # the verdict card, one line each
            print(f"report: {html_path}")
        return code

    return handler


def _wants_embedded_ray(argv: list[str]) -> bool:
    """``curate run`` that will start its own Ray runtime (no --address, no RAY_ADDRESS, not inline)."""
    if not argv or argv[0] != "run" or os.environ.get("RAY_ADDRESS"):
        return False
    if "--address" in argv or any(a.startswith("--address=") for a in argv):
        return False
    return not any(a in ("--engine=inline",) for a in argv) and not (
        "--engine" in argv and argv[argv.index("--engine") + 1 : argv.index("--engine") + 2] == ["inline"]
    )


# Libraries' own chatter (advisories, progress bars of downloads and dataset maps) stays off the terminal;
# set before any of them is imported, and inherited by Ray's workers. A user's own setting wins.
QUIET_LIBRARIES = {
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "DATASETS_VERBOSITY": "error",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    with _sigterm_as_interrupt(), warnings.catch_warnings():
        try:
            return _main(argv)
        except KeyboardInterrupt:
            # Ctrl-C, or SIGTERM (_sigterm_as_interrupt). Every unit of work is committed atomically, so
            # what finished is kept: the same command resumes from it.
            verb = next((a for a in argv if not a.startswith("-")), "")
            end_bar = "\n" if sys.stderr.isatty() else ""  # a progress bar may hold the line
            print(f"{end_bar}{interrupted_line(verb, argv)}", file=sys.stderr, flush=True)
            return 128 + (_TERMINATED[-1] if _TERMINATED else signal.SIGINT)


def _main(argv: list[str]) -> int:
    for name, value in QUIET_LIBRARIES.items():
        os.environ.setdefault(name, value)
    if _wants_embedded_ray(argv) and os.environ.get("CURATE_NETNS", "1") != "0":
        # Ray 2.60 binds its servers to every interface; a private network namespace (loopback only) keeps
        # the embedded runtime off the network. It must happen before any import starts a thread.
        from curate.runtime.netns import enter_private_network

        try:
            enter_private_network()
        except RuntimeError as e:  # called from a process that already runs threads (e.g. a notebook)
            logging.getLogger(__name__).warning(
                "%s; the embedded Ray runtime will listen on all interfaces", e
            )
    from curate.runtime.allocator import configure

    configure()  # before numpy, polars, pyarrow or Ray is imported (see curate/runtime/allocator.py)
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:
        _quiet_library_warnings()
    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    from curate.core.engine import EngineError
    from curate.core.errors import ConfigError, PhaseError
    from curate.core.registry import RegistryError
    from curate.io.runlock import RunLockedError
    from curate.io.sources import SourceError
    from curate.io.storage import StorageError
    from curate.pipeline.validate import EmptyRunError
    from curate.runtime.runner import AccountingError, RunDirError

    # One format for every verb's errors, as argparse writes usage errors: "curate VERB: error: MESSAGE".
    codes: list[tuple[tuple[type[BaseException], ...], int]] = [
        (
            (
                ConfigError,
                RegistryError,
                SourceError,
                StorageError,
                RunDirError,
                RunLockedError,
                PhaseError,
                EngineError,
                FileNotFoundError,
            ),
            2,
        ),
        ((AccountingError,), 3),
        ((EmptyRunError,), 4),
    ]
    try:
        result: Any = args.func(args)
    except tuple(t for types, _ in codes for t in types) as e:
        code = next(c for types, c in codes if isinstance(e, types))
        print(error_line(args.verb, e), file=sys.stderr)
        return code
    return int(result or 0)


RESUMING_VERBS = ("run", "proxy", "mix", "ablate", "search")  # their finished units or proxy runs are kept


def interrupted_line(verb: str, argv: list[str]) -> str:
    """``curate VERB: interrupted; ...`` with the command line that resumes (or redoes) the verb: ``argv``
    as given, less ``--restart`` (a rerun with it would discard what the interrupted run finished)."""
    again = [a for a in argv if not (verb == "run" and len(a) > 4 and "--restart".startswith(a))]
    command = shlex.join(["curate", *again])
    if not verb:
        return f"curate: interrupted. To start again, rerun: {command}"
    if verb in RESUMING_VERBS:
        return f"curate {verb}: interrupted; what finished is kept. To resume, rerun: {command}"
    return f"curate {verb}: interrupted. To finish, rerun: {command}"


_TERMINATED: list[int] = []  # the signal that stopped this process, when it was SIGTERM


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (``kill PID``, a scheduler's stop) raises KeyboardInterrupt in the main thread, so it takes
    Ctrl-C's path: the run directory's lock released, the engine shut down, one line saying how to resume.

    Installed before Ray starts; the Ray engine keeps it through ``ray.init``, which would put its own in
    place (``curate.core.ray_engine``). A second SIGTERM while the first unwinds is ignored, so the clean-up
    finishes. The handler in place before is restored on the way out (``main`` may run inside a test).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        if _TERMINATED:
            return
        _TERMINATED.append(signum)
        raise KeyboardInterrupt

    _TERMINATED.clear()
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


QUIET_LOGGERS = ("matplotlib", "PIL", "fontTools")  # "building the font cache" and the like: WARNING


def _quiet_library_warnings() -> None:
    """Warnings raised inside libraries (torch, transformers, matplotlib, datasets, ...) are for their
    developers, not for someone running a pipeline: only Python warnings attributed to curate's own modules
    or to the script run (``__main__``) reach the terminal, and the loggers in ``QUIET_LOGGERS`` only at
    ERROR. ``curate -v``, or warning options of the user's own (``-W``, ``PYTHONWARNINGS``), keep them all."""
    if sys.warnoptions:
        return
    warnings.filterwarnings("ignore", module=r"(?!curate(\.|$))")
    warnings.filterwarnings("default", module=r"__main__$")
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def error_line(verb: str, e: BaseException) -> str:
    """``curate VERB: error: MESSAGE``; a message that already starts with ``VERB:`` loses that prefix."""
    return f"curate {verb}: error: {str(e).removeprefix(f'{verb}: ')}"

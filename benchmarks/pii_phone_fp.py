"""What pii_v1 takes in text that holds few phone numbers, this checkout beside another one in the same
run: spans per 10,000 whitespace words (every type but e-mail, and phones alone) per corpus, and every
phone span that only one of the two finds, listed for audit.

    .venv/bin/python benchmarks/pii_phone_fp.py --baseline-tree DIR [--kernel-docs DIR] [--out FILE]

``--baseline-tree`` is a folder holding the ``curate`` package to compare with, e.g. the commit before a
change: ``git archive COMMIT curate | tar -x -C /tmp/before``; it runs in a child process with that
folder on ``PYTHONPATH``. Corpora: ``clean/python_docs`` and ``clean/wikipedia`` (numbers, dates, versions
and ISBNs, few phone numbers), ``--kernel-docs`` (the Linux kernel's documentation, as
``benchmarks/pii_docs_rate.py`` reads it), ``--pyenv-fraction`` (the demo corpus) and ``--web`` (every ``web/`` file, the test-data-only ones
too: read here, never copied). Nothing in them set a rule.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPORA = HERE.parent.parent / "shared" / "corpora"
WEB = (
    "c4_en",
    "commoncrawl_2019",
    "webtext",
    "news",
    "blogs",
    "reddit_askhistorians",
    "nltk_webtext",
    "sms_spam",
)


def texts_of(spec: str) -> list[str]:
    """``corpora:NAME`` (a ``.jsonl.gz`` under ../shared/corpora), ``dir:PATH`` (``.rst`` / ``.txt``) or
    ``pyenv:FRACTION`` (the demo corpus: this environment's docs, a fraction of its Python files)."""
    kind, _, name = spec.partition(":")
    if kind == "pyenv":
        from curate.io.pyenv import PythonEnvParams, PythonEnvSource

        source = PythonEnvSource(PythonEnvParams(sample_fraction=float(name)))
        return [t for sh in source.shards() for b in source.read(sh) for t in b.column("text").to_pylist()]
    if kind == "dir":
        sys.path.insert(0, str(HERE))
        from pii_docs_rate import read_texts

        return read_texts(Path(name), None)
    with gzip.open(CORPORA / f"{name}.jsonl.gz", "rt") as f:
        return [json.loads(line)["text"] for line in f]


def spans_of(spec: str) -> list[tuple[int, str, str]]:
    """``(document, type, span)`` of every span the ``curate`` on ``sys.path`` finds."""
    from curate.filters.pii import Pii

    stage = Pii()
    return [(i, t, s) for i, text in enumerate(texts_of(spec)) for t, s in stage.spans(text)]


def baseline_spans(tree: Path, spec: str) -> list[tuple[int, str, str]]:
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--spans", spec],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree)},
    )
    return [tuple(x) for x in json.loads(out.stdout)]


def summary(spans: list[tuple[int, str, str]], words: int) -> dict:
    by_type = collections.Counter(t for _, t, _ in spans)
    non_email = len(spans) - by_type.get("email", 0)
    return {
        "spans": len(spans),
        "by_type": dict(by_type),
        "non_email_per_10k_words": non_email / words * 1e4,
        "phones_per_10k_words": by_type.get("phone", 0) / words * 1e4,
    }


def compare(spec: str, tree: Path) -> dict:
    texts = texts_of(spec)
    words = sum(len(t.split()) for t in texts)
    c0 = time.process_time()
    after = spans_of(spec)
    cpu = time.process_time() - c0
    before = baseline_spans(tree, spec)
    phones_a = collections.Counter((i, s) for i, t, s in after if t == "phone")
    phones_b = collections.Counter((i, s) for i, t, s in before if t == "phone")
    return {
        "docs": len(texts),
        "words": words,
        "before": summary(before, words),
        "after": summary(after, words),
        "after_cpu_s": cpu,
        "phones_only_after": sorted(s for (_, s) in (phones_a - phones_b).elements()),
        "phones_only_before": sorted(s for (_, s) in (phones_b - phones_a).elements()),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline-tree", type=Path, help="a folder holding the curate package to compare with")
    ap.add_argument("--kernel-docs", type=Path, default=None)
    ap.add_argument("--web", action="store_true", help="also every web/ corpus")
    ap.add_argument(
        "--pyenv-fraction", type=float, default=None, help="also the demo corpus at this fraction"
    )
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--spans", default=None, help=argparse.SUPPRESS)  # the child's job
    args = ap.parse_args()
    if args.spans:
        json.dump(spans_of(args.spans), sys.stdout)
        return 0
    if args.baseline_tree is None:
        ap.error("--baseline-tree is required")
    specs = ["corpora:clean/python_docs", "corpora:clean/wikipedia"]
    specs += [f"dir:{args.kernel_docs}"] if args.kernel_docs else []
    specs += [f"pyenv:{args.pyenv_fraction}"] if args.pyenv_fraction else []
    specs += [f"corpora:web/{w}" for w in WEB] if args.web else []
    out = {}
    for spec in specs:
        r = out[spec] = compare(spec, args.baseline_tree)
        b, a = r["before"], r["after"]
        print(
            f"{spec}: {r['docs']:,} docs, {r['words']:,} words; not e-mails per 10k words "
            f"{b['non_email_per_10k_words']:.3f} -> {a['non_email_per_10k_words']:.3f}, phones "
            f"{b['by_type'].get('phone', 0)} -> {a['by_type'].get('phone', 0)}"
        )
        print("  phones only after:", r["phones_only_after"][:60])
        print("  phones only before:", r["phones_only_before"][:60])
    if args.out:
        args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

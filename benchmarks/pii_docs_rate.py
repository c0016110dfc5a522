"""How often pii_v1 fires on documentation that holds no personal data but many dotted numbers (section,
errata and version numbers): spans per 10,000 whitespace words, all and those not e-mails, by type, with the
most frequent spans listed for audit.

    .venv/bin/python benchmarks/pii_docs_rate.py DIR [--limit N]

DIR is a folder of text files (``.rst``, ``.txt``, optionally ``.gz``), e.g. the Linux kernel's
documentation as Debian ships it: ``apt-get download linux-doc-6.1 && dpkg-deb -x linux-doc-6.1_*.deb x``,
then ``x/usr/share/doc/linux-doc-6.1/Documentation``. Nothing in it is used to set a rule: it is a check.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pii import fp_on_docs

from curate.filters.pii import Pii, PiiParams


def read_texts(folder: Path, limit: int | None) -> list[str]:
    """Every ``.rst`` / ``.txt`` file under ``folder`` (gzip-compressed ones too), in path order."""
    paths = sorted(
        p for p in folder.rglob("*") if p.is_file() and p.name.removesuffix(".gz").endswith((".rst", ".txt"))
    )
    texts = []
    for p in paths[:limit]:
        data = p.read_bytes()
        texts.append((gzip.decompress(data) if p.suffix == ".gz" else data).decode("utf-8", "replace"))
    return texts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--limit", type=int, default=None, help="the first N files only")
    args = ap.parse_args()
    texts = read_texts(args.folder, args.limit)
    c0 = time.process_time()
    out = fp_on_docs(Pii(PiiParams()), texts, args.folder.name)
    print(
        f"{out['non_email_per_10k_words']:.3f} non-e-mail spans per 10,000 words ({time.process_time() - c0:.0f} CPU-s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

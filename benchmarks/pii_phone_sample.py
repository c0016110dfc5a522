"""Phone numbers as real pages write them: a hand-labelled sample of the shared web corpora, and
pii_v1's recall and precision on it.

    .venv/bin/python benchmarks/pii_phone_sample.py score [--docs] [--baseline-tree DIR] [--out FILE]
    .venv/bin/python benchmarks/pii_phone_sample.py check      # the sample is what draw() finds

**Candidates.** A deliberately loose pattern (:data:`LOOSE`) takes every run of digit groups split by a
space, dot, dash, en dash, slash or bracket, and every bare run of 7 or more digits, with 7-15 digits in
all; the first occurrence of each distinct candidate string per source is kept. Sources: every candidate
of ``web/c4_en`` (ODC-BY), ``web/commoncrawl_2019`` (dolma's test pages, Apache-2.0 repository),
``web/webtext`` and ``web/news`` (the GPT-2 output dataset, MIT repository) and ``web/sms_spam`` (the UCI
SMS Spam Collection, CC BY 4.0). Left out: the sources the corpora README marks test-data-only or
non-commercial (``web/blogs``, ``web/reddit_askhistorians``), ``web/nltk_webtext`` (no licence of its
own) and Wikipedia (CC BY-SA; measured apart, as spans per 10,000 words).

**Labels.** Each candidate was labelled by reading its context: ``phone`` or ``not_phone``. A phone
carries ``value``, the number as it must disappear (a ``+`` or an extension the loose pattern left out
added, a bracket or a glued price cut off), its ``region`` (``NANP``, ``GB``, ``intl`` for a number
written with ``+``, or the ISO code of another country read from its context) and, where it is not
written as a whole number, its ``form``: ``glued`` (run into a price, an age or a word:
``0871277810910p/min``), ``malformed`` (a digit too many or too few), ``local7`` (seven digits, no area
code), ``noplus`` (a country code without its ``+``), ``vanity`` (letters: ``1-800-873-TIPS``). Rows hold
only a short context (40 characters each side) with its offsets in the document, never the document.

**In scope** is what ``pii_v1`` claims with its default ``phone_regions`` (US, GB): numbers written
with ``+``, and whole, well-formed NANP and GB numbers. Recall is reported in scope, overall, per region
and per form, and with ``phone_regions`` widened to every region of the sample. A phone counts as found
when one ``phone`` span covers its whole value (nothing of it left raw); a ``not_phone`` candidate is a
false positive when a ``phone`` span overlaps it. Scored on the committed contexts (no corpus needed);
``--docs`` scores the same candidates in their whole documents (needs ``../shared/corpora``);
``--baseline-tree DIR`` also scores the ``curate`` package in DIR (``git archive COMMIT curate | tar -x
-C DIR``), in a child process, for a before-and-after in one run.

The rules of ``pii_v1`` were written while this sample was labelled (it is not held out); the project's
other false-positive measures (Python docs, Wikipedia, the Linux kernel's documentation) were not.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from scipy.stats import binomtest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if "--child" not in sys.argv:  # a child scores the curate its PYTHONPATH names (--baseline-tree)
    sys.path.insert(0, str(ROOT))

from curate.filters.pii import Pii, PiiParams  # noqa: E402

SAMPLE = ROOT / "tests" / "filters" / "data" / "pii_phones_web.jsonl"
CORPORA = ROOT.parent / "shared" / "corpora"
SOURCES = ("web/c4_en", "web/commoncrawl_2019", "web/webtext", "web/news", "web/sms_spam")
CONTEXT = 40  # characters kept each side of a candidate (and of its value)
DEFAULT_SCOPE = ("NANP", "GB", "intl")
_SEP = r"(?:[ .\-/\u2010-\u2013]|\) ?|\(| \()"
LOOSE = re.compile(r"(?<![\w])[+(]?\d+(?:" + _SEP + r"\d+)+\)?|(?<![\w])\d{7,}")


def candidates(text: str) -> Iterable[re.Match[str]]:
    """The loose pattern's matches with 7-15 digits."""
    for m in LOOSE.finditer(text):
        if 7 <= sum(c.isdigit() for c in m.group()) <= 15:
            yield m


def draw(corpora: Path = CORPORA) -> list[dict]:
    """Every candidate of :data:`SOURCES`, the first occurrence of each distinct string per source, with
    its context; no labels."""
    rows = []
    for source in SOURCES:
        seen: set[str] = set()
        with gzip.open(corpora / f"{source}.jsonl.gz", "rt") as f:
            for line in f:
                doc = json.loads(line)
                for m in candidates(doc["text"]):
                    if m.group() in seen:
                        continue
                    seen.add(m.group())
                    rows.append(_row(source, doc["id"], doc["text"], m.start(), m.end()))
    return rows


def _row(
    source: str, doc: str, text: str, start: int, end: int, lo: int | None = None, hi: int | None = None
) -> dict:
    lo = max(0, (start if lo is None else lo) - CONTEXT)
    hi = min(len(text), (end if hi is None else hi) + CONTEXT)
    return {
        "id": f"{source.split('/')[1]}:{doc}:{start}",
        "source": source,
        "doc": doc,
        "start": start,
        "end": end,
        "candidate": text[start:end],
        "context": text[lo:hi],
        "context_start": lo,
    }


def load(path: Path = SAMPLE) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def in_scope(row: dict, regions: tuple[str, ...] = DEFAULT_SCOPE) -> bool:
    return row["label"] == "phone" and row["region"] in regions and not row.get("form")


def _judge(row: dict, text: str, offset: int, found: list[tuple[str, int, int]]) -> tuple[bool, bool]:
    """(found, false positive) of one labelled row, given the spans found in ``text``, whose first
    character is at ``offset`` in the document."""
    phones = [(s + offset, e + offset) for t, s, e in found if t == "phone"]
    if row["label"] == "phone":
        a, b = row["value_start"], row["value_start"] + len(row["value"])
        return any(s <= a and b <= e for s, e in phones), False
    a, b = row["start"], row["end"]
    return False, any(s < b and a < e for s, e in phones)


def score(rows: list[dict], stage: Pii, docs: dict[str, str] | None = None) -> dict:
    """Recall (in scope, overall, per region and form), precision and the rows missed or wrongly taken;
    in the rows' contexts, or in their whole documents when ``docs`` (id -> text) is given."""
    found, fp = {}, {}
    cache: dict[str, list[tuple[str, int, int]]] = {}
    for r in rows:
        if docs is not None:
            key = f"{r['source']}:{r['doc']}"
            if key not in cache:
                cache[key] = stage.locate(docs[key])
            found[r["id"]], fp[r["id"]] = _judge(r, docs[key], 0, cache[key])
        else:
            spans = stage.locate(r["context"])
            found[r["id"]], fp[r["id"]] = _judge(r, r["context"], r["context_start"], spans)
    phones = [r for r in rows if r["label"] == "phone"]
    scope = [r for r in phones if in_scope(r)]
    negatives = [r for r in rows if r["label"] == "not_phone"]
    tp_all = sum(found[r["id"]] for r in phones)
    n_fp = sum(fp[r["id"]] for r in negatives)

    def rate(group: list[dict]) -> dict:
        k = sum(found[r["id"]] for r in group)
        ci = binomtest(k, len(group)).proportion_ci(method="wilson") if group else None
        return {
            "n": len(group),
            "found": k,
            "recall": k / len(group) if group else None,
            "ci95": [ci.low, ci.high] if ci else None,
        }

    by = collections.defaultdict(list)
    for r in phones:
        by[f"region={r['region']}"].append(r)
        by[f"form={r.get('form') or 'whole'}"].append(r)
        by[f"source={r['source']}"].append(r)
    return {
        "candidates": len(rows),
        "phones": len(phones),
        "not_phones": len(negatives),
        "in_scope": rate(scope),
        "in_scope_by_region": {g: rate([r for r in scope if r["region"] == g]) for g in DEFAULT_SCOPE},
        "all_phones": rate(phones),
        "by": {k: rate(v) for k, v in sorted(by.items())},
        "false_positives": n_fp,
        "precision": tp_all / (tp_all + n_fp) if tp_all + n_fp else None,
        "precision_ci95": list(binomtest(tp_all, tp_all + n_fp).proportion_ci(method="wilson"))
        if tp_all + n_fp
        else None,
        "missed_in_scope": [(r["id"], r["value"]) for r in scope if not found[r["id"]]],
        "missed_out_of_scope": [
            (r["id"], r["value"], r["region"], r.get("form"))
            for r in phones
            if not in_scope(r) and not found[r["id"]]
        ],
        "false_positive_rows": [(r["id"], r["candidate"]) for r in negatives if fp[r["id"]]],
    }


def check(rows: list[dict]) -> list[str]:
    """Differences between the committed sample and what :func:`draw` finds in the corpora now."""
    drawn = {d["id"]: d for d in draw()}
    problems = [f"{r['id']}: no longer drawn" for r in rows if r["id"] not in drawn]
    problems += [f"{i}: drawn but not in the sample" for i in drawn if i not in {r["id"] for r in rows}]
    docs = _docs({r["source"] for r in rows})
    for r in rows:
        text = docs[f"{r['source']}:{r['doc']}"]
        cs = r["context_start"]
        if text[cs : cs + len(r["context"])] != r["context"] or text[r["start"] : r["end"]] != r["candidate"]:
            problems.append(f"{r['id']}: context or candidate differs from the document")
        if (
            r["label"] == "phone"
            and text[r["value_start"] : r["value_start"] + len(r["value"])] != r["value"]
        ):
            problems.append(f"{r['id']}: value {r['value']!r} is not at value_start")
    return problems


def _docs(sources: set[str]) -> dict[str, str]:
    out = {}
    for source in sorted(sources):
        with gzip.open(CORPORA / f"{source}.jsonl.gz", "rt") as f:
            for line in f:
                d = json.loads(line)
                out[f"{source}:{d['id']}"] = d["text"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["score", "check"])
    ap.add_argument(
        "--docs", action="store_true", help="also score in the whole documents (needs the corpora)"
    )
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    ap.add_argument(
        "--baseline-tree", type=Path, default=None, help="also score the curate package in this folder"
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    rows = load()
    if args.child:
        json.dump(score(rows, Pii()), sys.stdout)
        return 0
    if args.what == "check":
        problems = check(rows)
        print("\n".join(problems) or f"{len(rows)} rows: the sample is what draw() finds")
        return 1 if problems else 0
    regions = sorted({r["region"] for r in rows if r["label"] == "phone"} - {"NANP", "intl"})
    settings = {
        "default": PiiParams(),
        "every_region": PiiParams(phone_regions=sorted(set(regions) | {"US"})),
    }
    out: dict = {"sample": str(SAMPLE.relative_to(ROOT)), "regions_widened": sorted(set(regions) | {"US"})}
    for name, params in settings.items():
        c0 = time.process_time()
        out[f"{name}/contexts"] = score(rows, Pii(params))
        if args.docs:
            docs = _docs({r["source"] for r in rows})
            out[f"{name}/documents"] = score(rows, Pii(params), docs)
        out[f"{name}/cpu_s"] = time.process_time() - c0
    if args.baseline_tree:
        child = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "score", "--child"],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(args.baseline_tree)},
        )
        out["baseline/contexts"] = json.loads(child.stdout)
    for key, res in out.items():
        if not isinstance(res, dict):
            continue
        s, a = res["in_scope"], res["all_phones"]
        print(
            f"{key}: in scope {s['found']}/{s['n']} = {s['recall']:.3f} [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}]; all phones {a['found']}/{a['n']} = "
            f"{a['recall']:.3f}; false positives {res['false_positives']} of {res['not_phones']} negatives; "
            f"precision {res['precision']:.3f}"
        )
        print("  missed in scope:", res["missed_in_scope"])
        print("  false positives:", res["false_positive_rows"])
    if args.out:
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

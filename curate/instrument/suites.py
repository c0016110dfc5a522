"""Built-in target suites for ``proxy.eval_suite``: what a web curation should be judged against.

``web_targets`` is built from ``../shared/corpora`` (relative to the project root, the working directory
or the pipeline file; see :func:`resolve`): clean reference prose (bpb) and benchmark items (bpb of the
gold continuation; accuracy reported beside it). Selection targets (a pipeline's ``target:``) must come
from other documents than these: the text sets use the *first* documents of each file, so a target
sample drawn from the rest of a file is disjoint by construction (and checked by 13-gram overlap).

``python_docs`` is the demo's target, available in every environment: the standard library's
documentation topics (``pydoc_data``, input source ``pydoc_topic``), held out of every recipe by source.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CORPORA = "../shared/corpora"

SUITES: dict[str, list[dict[str, Any]]] = {
    "web_targets": [
        {"name": "wikitext2", "kind": "text", "path": f"{CORPORA}/clean/wikitext2_valid.jsonl.gz"},
        {"name": "wikipedia", "kind": "text", "path": f"{CORPORA}/clean/wikipedia.jsonl.gz", "max_docs": 40},
        {"name": "gutenberg", "kind": "text", "path": f"{CORPORA}/clean/gutenberg.jsonl.gz", "max_docs": 3},
        {"name": "arc_easy", "kind": "choice", "path": f"{CORPORA}/eval/arc_easy.jsonl.gz", "max_items": 200},
        {"name": "piqa", "kind": "choice", "path": f"{CORPORA}/eval/piqa.jsonl.gz", "max_items": 200},
        {
            "name": "lambada",
            "kind": "choice",
            "path": f"{CORPORA}/eval/lambada_openai.jsonl.gz",
            "max_items": 200,
        },
        {
            "name": "winogrande",
            "kind": "choice",
            "path": f"{CORPORA}/eval/winogrande.jsonl.gz",
            "max_items": 200,
        },
    ],
    "python_docs": [
        {"name": "python_docs", "kind": "text", "source": "pydoc_topic"},
    ],
}


def suite(name: str) -> list[dict[str, Any]]:
    """The eval entries of a built-in suite (copies); ``KeyError`` naming the valid suites."""
    if name not in SUITES:
        raise KeyError(f"unknown eval_suite {name!r}; valid suites: {', '.join(SUITES)}")
    return [dict(e) for e in SUITES[name]]


def resolve(path: str, pipeline_path: str | None = None) -> Path:
    """An eval file path as written, resolved by the one rule for every path a pipeline names
    (:func:`curate.io.paths.resolve`: the working directory, the pipeline file's folder, the repository
    root; the first that exists)."""
    from curate.io.paths import resolve as resolve_path

    return resolve_path(path, pipeline_path)

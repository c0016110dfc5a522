"""An export at mixture weights (``export.mixture``): the train split drawn per source at the weights a
``curate mix`` search chose (or any given), repeating a source whose weight asks for more than it has.

```yaml
export:
  mixture: search            # the chosen weights of RUN/mix.json; or {blogs: 0.3, news: 0.7}
  mixture_by: source         # the column whose values the weights name (default: source)
  mixture_tokens: null       # train tokens at the weights; default: the train split's own size
  mixture_unconfirmed: false # true: export `search` even when its confirmation did not call it better
```

``search`` exports the chosen weights only when the search's confirmation on fresh seeds called them
better than the natural mixture (``mix.json``'s ``decision.export``); otherwise it is refused with the
search's own sentence and the override's name, ``mixture_unconfirmed`` (``--unconfirmed-mixture``).

Per source, its train documents (in the export's seeded shuffle) are taken whole passes at a time, then
the prefix whose tokens come closest to what remains, so each source's tokens land within half a
document of ``weight x mixture_tokens``; the drawn documents are shuffled together (seed + 1). The
validation split keeps the data's own mixture. Weights are in tokens of the export's tokenizer, or in
UTF-8 bytes of text when it writes no token format. The manifest's and the dataset card's ``mixture``
block holds each source's weight, target, written tokens, share, documents and epochs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from curate.core.errors import PhaseError
from curate.io import runfiles

SEARCH = "search"


def _called_better(mix: dict[str, Any]) -> tuple[bool, str]:
    """Whether ``mix.json``'s confirmation called the chosen mixture better than the natural mixture, and
    the search's sentence (a ``mix.json`` from before the ``decision`` block: its confirmation's call)."""
    decision = mix.get("decision")
    if isinstance(decision, dict) and "export" in decision:
        return bool(decision["export"]), str(decision.get("sentence", ""))
    call = ((mix.get("confirmation") or {}).get("chosen") or {}).get("call")
    if call is None:
        return False, "mix.json has no confirmation of the chosen mixture on fresh seeds."
    return call == "better", f"The confirmation called the chosen mixture {call.replace('_', ' ')}."


def resolve_weights(
    run_dir: Path, mixture: dict[str, float] | str, *, unconfirmed: bool = False
) -> tuple[dict[str, float], dict[str, Any] | None]:
    """The weights: given, or (``search``) the chosen mixture of ``RUN/mix.json``, refused unless its
    confirmation called it better than the natural mixture or ``unconfirmed`` overrides that; with what
    the export manifest records of the confirmation (``None`` for given weights)."""
    if mixture != SEARCH:
        assert isinstance(mixture, dict)
        return dict(mixture), None
    path = Path(run_dir) / "mix.json"
    if not path.is_file():
        raise PhaseError(f"export.mixture: search: {path} does not exist; run `curate mix {run_dir}` first")
    mix = json.loads(path.read_text())
    better, sentence = _called_better(mix)
    if not better and not unconfirmed:
        raise PhaseError(
            f"export.mixture: search: {path}'s confirmation did not call the chosen mixture better than the "
            f"natural mixture, so it is not exported. {sentence} To export the chosen weights anyway, set "
            f"export.mixture_unconfirmed: true (or `curate export {run_dir} --mixture search "
            "--unconfirmed-mixture`); without export.mixture the export keeps the natural mixture"
        )
    chosen = mix["chosen"]["weights"]
    note = {"called_better": better, "exported_unconfirmed": not better, "sentence": sentence}
    return {str(k): float(v) for k, v in chosen.items()}, note


def check_sources(weights: dict[str, float], sources: np.ndarray, by: str) -> None:
    """Refuse, before any work, weights that name a value ``by`` never takes in the kept documents (a
    typo, or a source the pipeline removed); the message lists the sources there are, with counts."""
    counts = dict(zip(*np.unique(sources, return_counts=True), strict=True)) if sources.size else {}
    have = ", ".join(f"{s} ({int(n):,} documents)" for s, n in sorted(counts.items())) or "none"
    unknown = sorted(s for s in weights if s not in counts)
    if unknown:
        raise PhaseError(
            f"export.mixture: no kept document has {by} {', '.join(map(repr, unknown))}; "
            f"the kept documents' {by} values are: {have}"
        )


def draw(
    sources: np.ndarray,
    lengths: np.ndarray,
    train: np.ndarray,
    weights: dict[str, float],
    total: int,
    seed: int,
) -> tuple[np.ndarray, dict[str, dict[str, Any]]]:
    """The train order at ``weights`` (module docstring) from ``train`` (document numbers in order) with
    per-document ``sources`` and ``lengths``; returns it and each source's counts."""
    picks, report = [], {}
    for s, w in sorted(weights.items()):
        pool = train[sources[train] == s]
        target = round(w * total)
        have = int(lengths[pool].sum())
        if target and not have:
            raise PhaseError(
                f"export.mixture: source {s!r} has weight {w:.4g} but no train documents (all of its "
                f"{int((sources == s).sum()):,} kept documents fell in the validation split); lower "
                "export.val_fraction or give it weight 0"
            )
        passes, rest = divmod(target, have) if have else (0, 0)
        parts = [pool] * passes
        if rest:
            cum = np.cumsum(lengths[pool])
            k = int(np.searchsorted(cum, rest))
            below = int(cum[k - 1]) if k else 0
            k = k + 1 if k < len(cum) and cum[k] - rest < rest - below else k
            parts.append(pool[:k])
        take = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        written = int(lengths[take].sum())
        picks.append(take)
        report[s] = {
            "weight": round(w, 6),
            "target": target,
            "written": written,
            "docs": int(take.size),
            "unique_docs": int(np.unique(take).size),
            "available": have,
            "epochs": round(written / have, 4) if have else 0.0,
        }
    order = np.concatenate(picks).astype(np.int64) if picks else np.zeros(0, np.int64)
    order = order[np.random.default_rng(seed + 1).permutation(order.size)]
    done = int(lengths[order].sum())
    for r in report.values():
        r["share"] = round(r["written"] / done, 6) if done else 0.0
    return order, report


@dataclass
class Mixer:
    """A run's export mixture: the weights and each kept document's source, in kept-file order."""

    weights: dict[str, float]
    by: str
    tokens: int | None
    seed: int
    sources: np.ndarray
    confirmation: dict[str, Any] | None = None
    report: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, ctx: Any, opts: Any, files: list[Path]) -> Mixer:
        weights, confirmation = resolve_weights(
            ctx.run_dir, opts.mixture, unconfirmed=opts.mixture_unconfirmed
        )
        values: list[Any] = []
        for f in files:
            if opts.mixture_by not in runfiles.read_schema(f).names:
                raise PhaseError(f"export.mixture_by: {f} has no column {opts.mixture_by!r}")
            values += runfiles.read_table(f, columns=[opts.mixture_by]).column(opts.mixture_by).to_pylist()
        sources = np.array([str(v) for v in values], dtype=object)
        check_sources(weights, sources, opts.mixture_by)
        return cls(weights, opts.mixture_by, opts.mixture_tokens, opts.seed, sources, confirmation)

    def byte_lengths(self, files: list[Path]) -> np.ndarray:
        """UTF-8 bytes of every kept document's text: the unit when no tokenizer is named."""
        out: list[int] = []
        for f in files:
            out += [
                len((t or "").encode())
                for t in runfiles.read_table(f, columns=["text"]).column("text").to_pylist()
            ]
        return np.array(out, dtype=np.int64)

    def orders(self, orders: dict[str, np.ndarray], lengths: np.ndarray, unit: str) -> dict[str, np.ndarray]:
        """``orders`` with the train split redrawn at the weights; fills :attr:`report`."""
        train = orders["train"]
        total = self.tokens or int(lengths[train].sum())
        order, per_source = draw(self.sources, lengths, train, self.weights, total, self.seed)
        self.report = {
            "by": self.by,
            "unit": unit,
            "total_target": total,
            "total_written": int(lengths[order].sum()),
            "sources": per_source,
            "validation": "the data's own mixture",
            **({"search": self.confirmation} if self.confirmation is not None else {}),
        }
        return {**orders, "train": order}


def card_section(report: dict[str, Any]) -> str:
    """The dataset card's paragraph on the mixture: one row per source."""
    rows = "\n".join(
        f"| {s} | {r['weight']:.4f} | {r['written']:,} | {r['share']:.4f} | {r['docs']:,} | {r['epochs']:.2f} |"
        for s, r in report["sources"].items()
    )
    return (
        f"\n## Mixture\n\nThe train split is drawn per `{report['by']}` at the weights below "
        f"({report['unit']}; a weight above a source's share repeats it, `epochs`); validation keeps the "
        f"data's own mixture.\n\n| {report['by']} | weight | {report['unit']} | share | documents | epochs |\n"
        f"| --- | ---: | ---: | ---: | ---: | ---: |\n{rows}\n"
    )

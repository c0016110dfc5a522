"""A capacity model: projected wall time, shuffle bytes, memory and bottleneck of a pipeline run.

Every rate is a *measured* per-core throughput from this repository's benchmarks (the source is named
next to it, MB of document text per CPU-second); the model assumes that stages scale linearly with
cores, that every stage sees the whole input (removals are ignored, so it errs long), and that a
shuffle moves its key bytes once over the network. It has not been validated beyond 2 M documents on
one machine and a three-node cluster on one machine: read its output as an order of magnitude, with
the assumptions it prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MB = 1e6
GIB = 2**30


@dataclass(frozen=True)
class Rate:
    mb_per_core_s: float
    source: str
    # a stage whose cost follows documents, not bytes (an encoder truncating each text): documents per
    # CPU-second, used instead of mb_per_core_s when set
    docs_per_core_s: float | None = None


# Per-core throughput, MB of text per CPU-second, as measured here (2-core shared machines: pessimistic).
# The web recipe's stages: `bench_pipeline.py --compare` of 2026-12-05 (BENCHMARKS.md section 1,
# AVX2-only EPYC, new's median per-stage CPU-s of 3 runs over 60,909 web documents, one core) and each
# stage's bytes_in in the manifest (so a filter late in the recipe is rated on the text it saw, not the input).
# Document-wise stages scale with the text; the global stages (exact, MinHash) depend on the engine.
_WEB = "BENCHMARKS.md 1 (2026-12-05): the web recipe, inline, one core"
RATES: dict[str, Rate] = {
    "read": Rate(46.1, f"{_WEB}: 64.5 MB in 1.40 CPU-s"),
    "normalize_v1": Rate(52.9, f"{_WEB}: 64.5 MB in 1.22 CPU-s"),
    # The global stages on Ray: the 2 M-document run's rates (shuffle, reduce and component rounds on
    # workers included). On the inline engine they run in one process: INLINE_RATES below.
    "exact_dedup_v1": Rate(16.0, "RESULTS-load.md run 1, 2 M docs: exact 141 worker-s for 2.25 GB"),
    "url_filter_v1": Rate(243.0, f"{_WEB}: 63.1 MB in 0.26 CPU-s (documents without a URL pass cheaply)"),
    "language_v1": Rate(11.4, f"{_WEB}: numpy engine, 63.1 MB in 5.55 CPU-s"),
    # The word-based filters share one word split per batch (the first of them pays it: WORD_SPLIT), so
    # their rates are without it: gopher_repetition_v1 took 9.40 CPU-s for 60.4 MB split included.
    "gopher_repetition_v1": Rate(17.3, f"{_WEB}: 60.4 MB in 9.40 CPU-s less the word split"),
    "gopher_quality_v1": Rate(24.8, f"{_WEB}: 58.1 MB in 2.34 CPU-s (words split by gopher_repetition_v1)"),
    "c4_quality_v1": Rate(14.5, f"{_WEB}: 47.8 MB in 3.30 CPU-s"),
    "fineweb_quality_v1": Rate(58.2, f"{_WEB}: 34.9 MB in 0.60 CPU-s"),
    "minhash_dedup_v1": Rate(1.91, "RESULTS-load.md run 1, 2 M docs: MinHash 1,176 worker-s for 2.25 GB"),
    "fasttext_quality_v1": Rate(11.5, "RESULTS-scorers.md: ~6,000 docs/s on 4,609 docs of 8.8 MB"),
    "degeneration_v1": Rate(5.6, "RESULTS-scorers.md: 2,900 docs/s, the low end"),
    "select": Rate(500.0, "column comparisons only (not measured; negligible)"),
    # Per document (BENCHMARKS.md 11, 2026-12-06, f455c8c, CPU B, one thread; collect + reduce + apply):
    # the hashed embedding, and a neural encoder (all-MiniLM-L6-v2, texts truncated at 256 tokens).
    "semantic_dedup_v1": Rate(
        0.0, "BENCHMARKS.md 11: hashed embedding, 2,675 docs per CPU-s (2,000 documents)", 2675.0
    ),
    "semantic_dedup_v1[neural]": Rate(
        0.0, "BENCHMARKS.md 11: all-MiniLM-L6-v2, 10.0 docs per CPU-s (2,000 documents)", 10.0
    ),
    # WordLlama's static token table: a lookup and a mean, not an encoder (RESULTS-pii-semdedup.md,
    # "Corpus scale on CPU", 2026-12-07: 3,000 web documents, one worker, set-up apart).
    "semantic_dedup_v1[wordllama-l2-supercat]": Rate(
        0.0, "RESULTS-pii-semdedup.md (2026-12-07): static token table, 1,344 docs per CPU-s", 1344.0
    ),
    "pii_v1": Rate(0.0, "BENCHMARKS.md 10 (2026-12-07): 51,214 docs/s on web text, one core", 51214.0),
}
UNMEASURED = Rate(2.0, "NOT MEASURED: assumed 2 MB/s per core")
# The spaCy-compatible word split of a batch, paid once by the first word-based filter of a pipeline:
# gopher_quality_v1 alone took 8.9 CPU-s for 64.5 MB (median of 3, 2026-12-05), after the split 2.34 for 58.1 MB.
WORD_SPLIT = Rate(10.2, "gopher_quality_v1 alone (64.5 MB in 8.9 CPU-s) less its rate after the split")
WORD_STAGES = {"gopher_repetition_v1", "gopher_quality_v1", "c4_quality_v1", "fineweb_quality_v1"}
# The inline engine (one process, one core) runs a global stage without a shuffle: its keys are grouped
# in memory, at the rates the web recipe measured inline (a Ray rate errs long there by 2-6x).
INLINE_RATES: dict[str, Rate] = {
    "exact_dedup_v1": Rate(36.5, f"{_WEB}: 63.9 MB in 1.75 CPU-s"),
    "minhash_dedup_v1": Rate(
        11.8, f"{_WEB}: 33.7 MB in 2.85 CPU-s, 13 near-duplicates (slower with more copies)"
    ),
}
ENGINES = ("ray", "inline")

# Bytes each global stage moves through its shuffle, per document (key rows; texts never travel).
ORDER_KEY = 16  # uint64 key + uint64 order
SHUFFLE_BYTES_PER_DOC = {
    "exact_dedup_v1": ORDER_KEY + 24,  # + the id (~24 bytes)
    "minhash_dedup_v1": 14 * ORDER_KEY,  # one row per band (14 bands by default)
    "decontam_v1": 0,
}
LINE_BYTES = 60  # an average line (line_dedup_v1 shuffles one key row per distinct line)
COMPONENT_ROUNDS = 10  # measured 8-15 rounds (benchmarks/bench_components.py)
ADJACENCY_ROW = 16  # (node, nbr) uint64
NETWORK_GB_S = 1.25  # per node: 10 Gbit/s
PART_DOCS = 2000  # input.batch_docs default: one part (unit of work) per batch
DRIVER_PER_PART = 2048  # bytes: the runner keeps each part's name and stats dict
PARTITION_TARGET_GIB = 1.0  # a shuffle partition this size sorts in ~3 GiB
WORKER_BASE_GIB = 0.6  # an idle Ray worker with pyarrow/polars/numpy loaded (RESULTS-load.md: 0.6-0.8)
DRIVER_BASE_GIB = 0.35  # the driver with an engine attached (bench_components: 270 MiB)
# Without --docs: RESULTS-load.md run 1 had 2 M web documents in 2.25 GB of text.
DOC_BYTES = 1125
# Disk, measured on pipelines/rethreshold.yaml over 4,000 web documents (6.73 MB of text): kept/ +
# rejected/ took 3.26 MB (0.48x the text, zstd Parquet with scores) and _work/ 6.41 MB for its two
# segments (0.48x each: every segment writes its parts; they stay until the run directory is removed).
PARQUET_PER_TEXT_BYTE = 0.48
GLOBAL_STAGES = {
    "exact_dedup_v1",
    "minhash_dedup_v1",
    "line_dedup_v1",
    "decontaminate_v1",
    "diversity_v1",
    "semantic_dedup_v1",
}


def base_name(name: str) -> str:
    """The registry name of a stage name as :func:`pipeline_stage_names` gives it (``x[variant]`` -> ``x``)."""
    return name.split("[", 1)[0]


def builtin_rate(name: str, inline: bool = False) -> Rate:
    """The built-in rate of a stage name (a ``[variant]`` with no rate of its own takes the variant
    family's, e.g. any encoder of semantic_dedup_v1 the neural rate), else :data:`UNMEASURED`."""
    if inline and name in INLINE_RATES:
        return INLINE_RATES[name]
    if name in RATES:
        return RATES[name]
    if "[" in name and f"{base_name(name)}[neural]" in RATES:
        return RATES[f"{base_name(name)}[neural]"]
    return UNMEASURED


@dataclass
class StagePlan:
    name: str
    core_s: float
    wall_s: float
    shuffle_bytes: float = 0.0
    source: str = ""


@dataclass
class Plan:
    docs: int
    bytes: int
    nodes: int
    cores: int
    stages: list[StagePlan] = field(default_factory=list)
    worker_peak_gib: float = 0.0
    driver_peak_gib: float = 0.0
    num_partitions: int = 0
    notes: list[str] = field(default_factory=list)
    docs_estimated: bool = False
    output_bytes: float = 0.0  # kept/ + rejected/
    scratch_bytes: float = 0.0  # _work/: every segment's parts and the global stages' key tables
    calibrated: bool = False  # rates and stage shares from a pilot run (--from-run)
    engine: str = "ray"

    @property
    def wall_s(self) -> float:
        return sum(s.wall_s for s in self.stages)

    @property
    def shuffle_bytes(self) -> float:
        return sum(s.shuffle_bytes for s in self.stages)

    @property
    def bottleneck(self) -> StagePlan:
        """The slowest stage whose rate was measured (an assumed rate does not decide it)."""
        measured = [s for s in self.stages if s.source != UNMEASURED.source] or self.stages
        return max(measured, key=lambda s: s.wall_s)


@dataclass(frozen=True)
class Pilot:
    """Per-stage rates and text shares measured by a finished run (``curate plan --from-run``)."""

    rates: dict[str, Rate]  # MB of text in per CPU-second, by registry name
    shares: dict[str, float]  # bytes a stage saw / bytes read: what earlier stages removed


def pilot_from_manifest(manifest: dict[str, Any], stage_names: list[str], where: str = "the run") -> Pilot:
    """A :class:`Pilot` from a run's ``manifest.json``: stage ``i`` of ``stage_names`` (``read`` first,
    as :func:`pipeline_stage_names` gives them) is the manifest's funnel row ``i``. A stage's rate is
    its text in over its CPU-seconds (a global stage's reduce included); its share is its text in over
    the text read."""
    rows = manifest.get("stages", [])
    if len(rows) != len(stage_names):
        raise ValueError(
            f"{where}: its manifest has {len(rows)} stage rows, the pipeline {len(stage_names)}; "
            "calibrate from a run of the same pipeline"
        )
    read_bytes = max(int(rows[0].get("bytes_out") or 0), 1)
    rates, shares = {}, {}
    for name, row in zip(stage_names, rows, strict=True):
        mb_in = (row["bytes_in"] if name != "read" else row["bytes_out"]) / MB
        rates[name] = Rate(
            max(mb_in, 1e-9) / max(row["cpu_s"], 1e-3),
            f"{where}: {mb_in:,.1f} MB in {row['cpu_s']:.1f} CPU-s",
        )
        shares[name] = 1.0 if name == "read" else row["bytes_in"] / read_bytes
    return Pilot(rates=rates, shares=shares)


def _shuffle_bytes(name: str, *, docs: int, nbytes: int, dup_rate: float) -> float:
    """The key bytes stage ``name`` moves through Ray's shuffle (0 for a document-wise stage)."""
    if name == "line_dedup_v1":
        return nbytes / LINE_BYTES * ORDER_KEY
    moved = float(docs * SHUFFLE_BYTES_PER_DOC.get(name, 0))
    if name == "minhash_dedup_v1":  # + the components' adjacency rows
        moved += docs * dup_rate * 2 * ADJACENCY_ROW * 2 * COMPONENT_ROUNDS
    return moved


def project(
    stage_names: list[str],
    *,
    docs: int | None,
    nbytes: int,
    nodes: int,
    cores: int,
    dup_rate: float = 0.1,
    driver_components: bool = False,
    pilot: Pilot | None = None,
    engine: str = "ray",
    measured: dict[str, Rate] | None = None,
) -> Plan:
    """Project a run of the stages (registry names, in order, ``read`` first) over ``docs`` documents
    of ``nbytes`` bytes of text on ``nodes`` nodes of ``cores`` cores each. ``dup_rate``: the share of
    documents in near-duplicate clusters (sets the edge count of MinHash's components);
    ``driver_components``: MinHash runs with ``components: driver`` (pairs gathered on the driver);
    ``pilot``: rates and text shares measured by a smaller run of the same pipeline, used instead of
    the built-in rates and the assumption that every stage sees all input; ``engine``: ``ray`` (stages
    on every core of every node, global stages through a shuffle) or ``inline`` (one process on one core:
    ``nodes`` and ``cores`` are taken as 1, global stages group their keys in memory at their inline
    rates, nothing crosses a network); ``measured``: rates measured on this machine (e.g. the input's read),
    used instead of the built-in ones."""
    if engine not in ENGINES:
        raise ValueError(f"engine: expected one of {', '.join(ENGINES)}, got {engine!r}")
    inline = engine == "inline"
    asked = (nodes, cores)
    if inline:
        nodes, cores = 1, 1
    total = nodes * cores
    estimated = docs is None
    docs = round(nbytes / DOC_BYTES) if docs is None else docs
    plan = Plan(docs=docs, bytes=nbytes, nodes=nodes, cores=cores, docs_estimated=estimated, engine=engine)
    plan.calibrated = pilot is not None
    if inline and asked != (1, 1):
        plan.notes.append(
            f"engine inline: one process on one core (--nodes {asked[0]} --cores {asked[1]} not used)"
        )
    partitions = total
    split_paid = False
    for name in stage_names:
        builtin = (measured or {}).get(name) or builtin_rate(name, inline)
        rate = pilot.rates[name] if pilot else builtin
        share = pilot.shares[name] if pilot else 1.0
        if rate.docs_per_core_s:
            core_s = docs * share / rate.docs_per_core_s
        else:
            core_s = nbytes * share / MB / rate.mb_per_core_s
        source = rate.source
        if name in WORD_STAGES and not split_paid and not pilot:  # a pilot's rate has the split in it
            core_s += nbytes / MB / WORD_SPLIT.mb_per_core_s
            source += f"; + the word split ({WORD_SPLIT.mb_per_core_s} MB/s)"
        split_paid = split_paid or name in WORD_STAGES
        sp = StagePlan(name=name, core_s=core_s, wall_s=core_s / total, source=source)
        if not inline:  # inline, the one process groups the keys in memory: no shuffle
            sp.shuffle_bytes = _shuffle_bytes(name, docs=docs, nbytes=nbytes, dup_rate=dup_rate)
        if sp.shuffle_bytes:
            # Every node sends (n-1)/n of its share; one node: local object store only.
            net = sp.shuffle_bytes * (nodes - 1) / nodes / (nodes * NETWORK_GB_S * 1e9)
            sp.wall_s += net
            partitions = max(partitions, int(sp.shuffle_bytes / (PARTITION_TARGET_GIB * GIB)) + 1)
        plan.stages.append(sp)
    batch_gib = min(nbytes / max(docs, 1), 64e3) * PART_DOCS * 10 / GIB  # one part, ~10 copies in flight
    plan.num_partitions = partitions
    reduce_gib = (
        max((s.shuffle_bytes for s in plan.stages), default=0.0) / partitions / GIB * 3
    )  # sort copies
    plan.worker_peak_gib = WORKER_BASE_GIB + max(batch_gib, reduce_gib)
    plan.driver_peak_gib = DRIVER_BASE_GIB + docs / PART_DOCS * DRIVER_PER_PART / GIB
    if driver_components and "minhash_dedup_v1" in stage_names:
        plan.driver_peak_gib += docs * dup_rate * (2 * 16 + 2 * 28) / GIB  # pairs + ids on the driver
        plan.notes.append("minhash components: driver: pairs and ids gather on the driver")
    segments = 1 + sum(1 for n in stage_names if base_name(n) in GLOBAL_STAGES)
    plan.output_bytes = nbytes * PARQUET_PER_TEXT_BYTE
    plan.scratch_bytes = nbytes * PARQUET_PER_TEXT_BYTE * segments + sum(
        s.shuffle_bytes for s in plan.stages if base_name(s.name) in GLOBAL_STAGES
    )
    unmeasured = [s for s in plan.stages if s.source == UNMEASURED.source]
    if unmeasured:
        plan.notes.append(
            f"no measured rate for {', '.join(s.name for s in unmeasured)}: assumed "
            f"{UNMEASURED.mb_per_core_s} MB/s/core; it does not decide the bottleneck"
        )
        slowest = max(unmeasured, key=lambda s: s.wall_s)
        if slowest.wall_s > plan.bottleneck.wall_s:
            plan.notes.append(
                f"at the assumed rate {slowest.name} would take {slowest.wall_s / plan.wall_s:.0%} of the wall, "
                f"more than {plan.bottleneck.name}: measure it before trusting the projection"
            )
    return plan


def format_plan(plan: Plan) -> str:
    def hms(s: float) -> str:
        return f"{s / 3600:.2f} h" if s >= 3600 else f"{s:.0f} s"

    est = f" (estimated from --bytes at {DOC_BYTES:,} bytes/doc; give --docs)" if plan.docs_estimated else ""
    inline = plan.engine == "inline"
    assumes = ["one process on one core" if inline else "linear scaling in cores"]
    if plan.calibrated:
        assumes.append("each stage sees the share of the text it saw in the pilot run")
    else:
        assumes.append("every stage sees all input")
    if not inline:
        assumes.append("10 Gbit/s per node")
    if plan.calibrated:
        assumes.append("the pilot's rates (its machine and load)")
    else:
        assumes.append("rates from a 2-core shared machine (pessimistic); not validated beyond 2 M documents")
    lines = [
        f"plan: {plan.docs:,} docs{est}, {plan.bytes / 1e9:,.1f} GB on {plan.nodes} node(s) x {plan.cores} cores"
        f" ({plan.engine} engine)",
        f"{'stage':24} {'core-h':>10} {'wall':>10} {'shuffle':>10}  rate source",
    ]
    for s in plan.stages:
        shuffle = f"{s.shuffle_bytes / 1e9:,.1f} GB" if s.shuffle_bytes else "-"
        lines.append(f"{s.name:24} {s.core_s / 3600:10,.1f} {hms(s.wall_s):>10} {shuffle:>10}  {s.source}")
    lines += [
        (
            f"projected wall {hms(plan.wall_s)}; no shuffle; peak memory of the one process (driver and "
            f"worker) {plan.worker_peak_gib + plan.driver_peak_gib:.1f} GiB"
            if inline
            else f"projected wall {hms(plan.wall_s)}; shuffle {plan.shuffle_bytes / 1e9:,.1f} GB; "
            f"peak memory per worker {plan.worker_peak_gib:.1f} GiB (with num_partitions >= "
            f"{plan.num_partitions:,}), driver {plan.driver_peak_gib:.2f} GiB"
        ),
        f"bottleneck: {plan.bottleneck.name} ({plan.bottleneck.wall_s / max(plan.wall_s, 1e-9):.0%} of wall)",
        f"disk: run directory {plan.output_bytes / 1e9:,.1f} GB (kept/ + rejected/) + {plan.scratch_bytes / 1e9:,.1f} GB"
        " scratch (_work/: each segment's parts, the global stages' key tables; in the run directory, a local"
        " mirror for a bucket)"
        + (
            ""
            if inline
            else "; shuffle partitions move through Ray's object store (memory, spilled to each node's Ray temp dir)"
        ),
        "assumes: " + ", ".join(assumes),
    ]
    lines += [f"note: {n}" for n in plan.notes]
    return "\n".join(lines)


def pipeline_stage_names(cfg: Any) -> tuple[list[str], bool]:
    """The registry names of a pipeline's stages in order (``read`` first; a ``filter:`` counts once; a
    semantic_dedup_v1 with an encoder as ``semantic_dedup_v1[<model>]``: its cost is the encoder's), and
    whether MinHash runs with ``components: driver``."""
    from curate.pipeline.config import build_stages

    names: list[str] = ["read"]
    driver = False
    for st in build_stages(cfg):
        model = getattr(st.params, "model", None) if st.name == "semantic_dedup_v1" else None
        names.append(f"{st.name}[{model}]" if model else st.name)
        if st.name == "minhash_dedup_v1" and getattr(st.params, "components", "engine") == "driver":
            driver = True
    return names, driver

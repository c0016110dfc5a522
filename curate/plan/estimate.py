"""What a run will cost on this machine, said before it starts (``curate run``, ``curate plan PIPELINE``).

Two parts, each with the settings that drive it:

* **curation**: the capacity model (:mod:`curate.plan.model`: per-stage rates measured by this repository's
  benchmarks, not on this machine) at the input's size, which :func:`measure_input` estimates by reading
  the first shard of each source in full and scaling by the shards' file sizes;
* **proxy phase**: every run the ``proxy:`` section asks for (recipes and controls x seeds x ladder points;
  the baseline's trunk with its curve branches), its tokens and eval passes (:func:`curate.instrument.speed.run_work`)
  priced at this machine's measured speed of the section's model (:func:`curate.instrument.speed.machine_speed`:
  a few timed steps, cached per machine), plus the phase's data preparation; the wall time schedules the
  runs on the slots the cores allow (``cores / proxy.cpus_per_run``), in the order the engine hands them out.

Wall times assume the cores are free; when the load average says other processes hold them, the estimate
says how much longer to expect. Follow-ups (``proxy.ablate``, ``search``, ``mix``) are not estimated.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from curate.core.engine_base import list_schedule
from curate.instrument.speed import RunWork, Speed, machine_speed, run_work, text_set_tokens
from curate.instrument.train_config import TrainConfig
from curate.plan.model import MB, Plan, Rate, StagePlan, pipeline_stage_names, project

# UTF-8 bytes per token of a byte-level BPE trained on the input (the proxy's own, when proxy.tokenizer
# names no file), by vocabulary: measured on web text (2026-12-07, 1.8 MB of ../shared/corpora/web to
# train, the other half to count): 2,048 -> 2.35, 8,192 -> 2.88; other sizes interpolated in log vocab.
BPE_BYTES_PER_TOKEN = {2048: 2.35, 8192: 2.88}
# The proxy phase's data preparation (eval sets, each recipe's token shards: decontaminated, tokenized,
# written; the controls' draws; the analysis), per MB of input text: the demo's record (BENCHMARKS.md, "The
# two commands", 2026-12-06: 29 s on 2 idle cores for 22.4 MB beside its runs).
PREP_CPU_S_PER_MB = 2.5
RAY_START_S = 10.0  # an embedded Ray runtime's start-up (BENCHMARKS.md 4: ~10-11 s)
SAMPLE_CHARS = 400_000  # of the input's text kept to measure a fixed tokenizer's bytes per token
SAMPLE_SHARDS = 3  # shards read per source (evenly spaced) to estimate the input's size


@dataclass
class InputSize:
    """The input's documents and UTF-8 bytes of text, estimated from the shards read (``read`` of
    ``shards``; ``read_cpu_s`` the CPU-seconds reading them took here, ``read_bytes`` their text), and a
    sample of its text."""

    docs: int
    bytes: int
    shards: int
    read: int
    read_bytes: int = 0
    read_cpu_s: float = 0.0
    sample: list[str] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return self.read == self.shards


def _weight(shard: Any) -> float | None:
    """A shard's size on disk (its files' sizes summed), or None when it has no local files."""
    files = dict(shard.extra).get("files")
    paths = [f[0] for f in files] if files else [shard.path]
    try:
        return float(sum(os.path.getsize(p) for p in paths))
    except (OSError, TypeError):
        return None


def measure_input(source: Any, sample_shards: int = SAMPLE_SHARDS) -> InputSize:
    """Read ``sample_shards`` shards of each source with files on disk (evenly spaced in the list) and every
    shard without files in full, timed; estimate each other shard from its file size: the documents per
    file byte of the shards read (those a ``limit`` of documents per file did not cut), at most ``limit``,
    which a shard at least as large as one the limit cut is taken to reach; the bytes at the shards read's
    bytes per document."""
    from curate.core import schema
    from curate.io.multi import each_source

    out = InputSize(docs=0, bytes=0, shards=0, read=0)
    for _, src in each_source(source):
        todo = src.shards()
        out.shards += len(todo)
        limit = getattr(src.params, "limit", None)
        weights = [_weight(s) for s in todo]
        sized = [i for i, w in enumerate(weights) if w]
        k = min(sample_shards, len(sized))
        picked = {sized[round(j * (len(sized) - 1) / max(1, k - 1))] for j in range(k)} if k else set()
        seen: list[tuple[float, int, int]] = []  # (file bytes, documents, text bytes) of the shards read
        for i, shard in enumerate(todo):
            if weights[i] and i not in picked:
                continue
            n = b = 0
            c0 = time.process_time()
            for t in src.read(shard):
                texts = t.column(schema.TEXT).to_pylist()
                n += len(texts)
                b += sum(len(x.encode()) for x in texts if x)
                if sum(len(x) for x in out.sample) < SAMPLE_CHARS:
                    out.sample += [x for x in texts[:50] if x]
            out.read_cpu_s += time.process_time() - c0
            out.docs, out.bytes, out.read = out.docs + n, out.bytes + b, out.read + 1
            out.read_bytes += b
            if weights[i]:
                seen.append((float(weights[i] or 0), n, b))
        d, b = _scaled([weights[i] or 0.0 for i in sized if i not in picked], seen, limit)
        out.docs, out.bytes = out.docs + d, out.bytes + b
    return out


def _scaled(weights: list[float], seen: list[tuple[float, int, int]], limit: int | None) -> tuple[int, int]:
    """Documents and text bytes of shards of file sizes ``weights``, from the shards read ``seen``."""
    if not seen or not weights:
        return 0, 0
    cut = [w for w, n, _ in seen if limit and n >= limit]
    free = [(w, n) for w, n, _ in seen if not (limit and n >= limit)]
    per_doc = sum(b for _, _, b in seen) / max(1, sum(n for _, n, _ in seen))
    density = sum(n for _, n in free) / sum(w for w, _ in free) if free else None
    docs = 0.0
    for w in weights:
        if limit and (density is None or any(c <= w for c in cut)):
            docs += limit
        else:
            est = (density or 0.0) * w
            docs += min(est, limit) if limit else est
    return round(docs), round(docs * per_doc)


# -- the proxy phase -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedRun:
    point: str
    recipe: str
    seed: int
    cfg: TrainConfig


@dataclass(frozen=True)
class EvalTokens:
    """Tokens one eval pass reads: text and held-out sets (whole windows), the choice sets' gold rows and
    all their rows (:func:`curate.instrument.speed.run_work`)."""

    text: int
    choice_gold: int
    choice_all: int


def planned_runs(proxy: Any) -> list[PlannedRun]:
    """Every run of a ``proxy:`` section (a parsed ``ProxyConfig``), as the phase hands them to the engine:
    per ladder point, per recipe and then control, per seed; the baseline's as its trunk with the curve's
    branches. The controls are those asked for, when there is a recipe besides the baseline to control."""
    names = [r.name for r in proxy.recipes]
    controls = list(proxy.controls) if any(n != proxy.baseline for n in names) else []
    out = []
    for point in proxy.points():
        for name in names + controls:
            for seed in point.seeds:
                cfg = proxy.train_config(seed, point, baseline=name == proxy.baseline)
                out.append(PlannedRun(point.name, name, seed, cfg))
    return out


def bytes_per_token(vocab_size: int) -> float:
    """A trained BPE's bytes per token at ``vocab_size`` (:data:`BPE_BYTES_PER_TOKEN`, log-interpolated)."""
    (v0, b0), (v1, b1) = sorted(BPE_BYTES_PER_TOKEN.items())
    f = (math.log(vocab_size) - math.log(v0)) / (math.log(v1) - math.log(v0))
    return max(1.0, b0 + f * (b1 - b0))


def eval_tokens(proxy: Any, pipeline_path: str | None, inp: InputSize) -> tuple[EvalTokens, str]:
    """Tokens of one eval pass of the section's eval sets, and how they were counted: the files' own
    texts and items (read as the phase reads them), held-out and input-source sets at ``eval_chars``; in
    the proxy tokenizer's tokens when ``proxy.tokenizer.path`` names it, else at a trained BPE's measured
    bytes per token."""
    from curate.instrument.evalsets import load_file_set

    encode: Callable[[list[str]], list[int]]
    if proxy.tokenizer_path:
        from curate.instrument.tokenizer import ProxyTokenizer
        from curate.io.files import repo_path

        tok = ProxyTokenizer.load(repo_path(proxy.tokenizer_path))
        how = f"counted with {os.path.basename(str(proxy.tokenizer_path))}"

        def encode(texts: list[str]) -> list[int]:
            return [len(ids) for ids in tok.encode_batch(texts)] if texts else []

        sample = inp.sample[:2000]
        per_byte = sum(encode(sample)) / max(1, sum(len(x.encode()) for x in sample)) if sample else 0.4
    else:
        bpt = bytes_per_token(proxy.vocab_size)
        how = f"at {bpt:.2f} bytes per token (a {proxy.vocab_size:,}-token BPE on web text)"

        def encode(texts: list[str]) -> list[int]:
            return [max(1, round(len(t.encode()) / bpt)) for t in texts]

        per_byte = 1 / bpt
    seq = proxy.train.seq_len
    text = gold = every = 0
    for spec in proxy.eval:
        if spec.path is not None:
            data = load_file_set(spec, proxy.eval_chars, pipeline_path)
            if spec.kind == "choice":
                for item in data.items:
                    joined = [c + x for c, x in zip(item.contexts, item.continuations, strict=True)]
                    rows = [min(seq, 1 + n) for n in encode(joined)]
                    gold += rows[item.gold]
                    every += sum(rows)
                continue
            text += text_set_tokens(sum(encode(data.texts)), seq)
            continue
        chars = proxy.eval_chars
        if spec.kind == "heldout":
            chars = min(chars, int((spec.holdout or 0) * inp.bytes))
        text += text_set_tokens(round(chars * per_byte), seq)
    return EvalTokens(text, gold, every), how


@dataclass
class ProxyEstimate:
    """The proxy phase's runs priced at measured speeds, scheduled on ``slots`` slots of ``cores``."""

    runs: list[PlannedRun]
    work: list[RunWork]
    speeds: dict[str, Speed]
    run_cpu_s: list[float]
    threads: int
    slots: int
    cores: int
    prep_cpu_s: float
    evals: EvalTokens
    evals_how: str
    notes: list[str] = field(default_factory=list)

    @property
    def workers(self) -> int:
        return min(self.slots, len(self.runs))

    @property
    def start_cpu_s(self) -> float:
        """The trainer's import and first calls, once in each worker process that trains."""
        return self.workers * max((s.worker_start_cpu_s for s in self.speeds.values()), default=0.0)

    @property
    def cpu_s(self) -> float:
        return sum(self.run_cpu_s) + self.prep_cpu_s + self.start_cpu_s

    @property
    def runs_wall_s(self) -> float:
        """The runs on the slots, in order, each at its CPU-seconds over its threads."""
        return list_schedule([c / self.threads for c in self.run_cpu_s], self.slots)

    @property
    def wall_s(self) -> float:
        start = self.start_cpu_s / max(1, self.workers)
        return self.prep_cpu_s / self.cores + start + self.runs_wall_s


SpeedOf = Callable[[TrainConfig, int, int], Speed]


def _machine_speed(cfg: TrainConfig, vocab_size: int, threads: int) -> Speed:
    return machine_speed(cfg, vocab_size=vocab_size, threads=threads)


def estimate_proxy(
    proxy: Any,
    *,
    evals: EvalTokens,
    input_bytes: int,
    cores: int,
    speed_of: SpeedOf = _machine_speed,
    evals_how: str = "",
) -> ProxyEstimate:
    """Price every run of ``proxy`` (a parsed ``ProxyConfig``) at ``speed_of(model's config, vocab,
    threads)``, with ``evals`` tokens per eval pass, and its data preparation at :data:`PREP_CPU_S_PER_MB`
    of ``input_bytes``; schedule the runs on ``cores`` cores."""
    threads = max(1, int(proxy.cpus_per_run))
    runs = planned_runs(proxy)
    speeds: dict[str, Speed] = {}
    work, cpu = [], []
    for r in runs:
        if r.cfg.model not in speeds:
            speeds[r.cfg.model] = speed_of(r.cfg, proxy.vocab_size, threads)
        w = run_work(
            r.cfg,
            text_tokens=evals.text,
            choice_gold_tokens=evals.choice_gold,
            choice_all_tokens=evals.choice_all,
        )
        work.append(w)
        cpu.append(w.cpu_s(speeds[r.cfg.model]))
    slots = max(1, int(cores / proxy.cpus_per_run)) if proxy.cpus_per_run else cores
    est = ProxyEstimate(
        runs=runs,
        work=work,
        speeds=speeds,
        run_cpu_s=cpu,
        threads=threads,
        slots=slots,
        cores=max(1, cores),
        prep_cpu_s=input_bytes / 1e6 * PREP_CPU_S_PER_MB,
        evals=evals,
        evals_how=evals_how,
    )
    follow = [k for k in ("data_limited", "ablate", "search", "mix") if getattr(proxy, k, None)]
    if follow:
        est.notes.append(f"not included: the runs proxy.{', proxy.'.join(follow)} ask for")
    if getattr(proxy, "sequential", None):
        seeds = max(len(p.seeds) for p in proxy.points())
        est.notes.append(
            f"proxy.sequential stops adding seeds once decided: counted at all {seeds}, the most it trains"
        )
    return est


def settings_lines(proxy: Any, est: ProxyEstimate) -> list[str]:
    """The settings that drive the proxy estimate, in words (runs, tokens, evals, cores)."""
    runs = est.runs
    recipes = [r.name for r in proxy.recipes]
    controls = sorted({r.recipe for r in runs} - set(recipes), key=list(proxy.controls).index)
    points = proxy.points()
    seeds = sorted({len(p.seeds) for p in points})
    base = proxy.train_config(0, baseline=True)
    trunk = ""
    if base.branches:
        budgets = ", ".join(f"{b / proxy.budget:g}T" for b in base.branches)
        trunk = f"; {proxy.baseline}'s trunk to {base.tokens / proxy.budget:g}T with finished branches at {budgets}"
    tokens = sum(w.train_tokens for w in est.work)
    plain = next((w for r, w in zip(runs, est.work, strict=True) if r.recipe != proxy.baseline), None)
    per_run = f", {plain.eval_tokens:,} eval tokens per run beside the baseline" if plain else ""
    point_names = ", ".join(p.name for p in points)
    lines = [
        f"runs: {len(runs)} = ({len(recipes)} recipes + {len(controls)} controls"
        f"{': ' + ', '.join(controls) if controls else ''}) x {'/'.join(map(str, seeds))} seeds x "
        f"{len(points)} point{'s' if len(points) != 1 else ''} ({point_names}){trunk}",
        f"tokens: {proxy.budget:,} per run, {tokens / 1e6:,.2f} M trained in all; evals: "
        f"{len(proxy.eval)} sets, {est.evals.text + est.evals.choice_gold:,} tokens per pass "
        f"({est.evals_how}){per_run}",
    ]
    for model, sp in est.speeds.items():
        lines.append(
            f"speed of {model}: {sp.train_tokens_per_cpu_s:,.0f} training and {sp.eval_tokens_per_cpu_s:,.0f} "
            f"eval tokens per CPU-s, {sp.run_fixed_cpu_s:.1f} CPU-s per run ({sp.source})"
        )
    lines.append(
        f"cores: {est.cores}, {est.slots} run{'s' if est.slots != 1 else ''} at a time "
        f"(proxy.cpus_per_run {proxy.cpus_per_run:g})"
    )
    return lines


# -- the whole estimate -------------------------------------------------------------------------------


@dataclass
class RunEstimate:
    """A run's estimate: the input's size, the curation's plan, the proxy phase's (None without one)."""

    input: InputSize
    curation: Plan
    proxy: ProxyEstimate | None
    proxy_settings: list[str]
    cores: int
    engine: str
    load: float
    target_cpu_s: float = 0.0  # the target pass, before the stages
    notes: list[str] = field(default_factory=list)

    @property
    def curation_cpu_s(self) -> float:
        return sum(s.core_s for s in self.curation.stages) + self.target_cpu_s

    @property
    def curation_wall_s(self) -> float:
        start = RAY_START_S if self.engine == "ray" else 0.0
        return self.curation.wall_s + self.target_cpu_s / self.cores + start


def cores_of(cfg: Any, engine: str) -> int:
    """The cores the run's engine uses: one inline, else ``engine.num_cpus`` or this machine's CPUs."""
    if engine == "inline":
        return 1
    return int(cfg.engine.num_cpus or os.cpu_count() or 1)


def estimate_run(cfg: Any, *, engine: str | None = None, proxy: bool = True) -> RunEstimate:
    """The estimate of running ``cfg`` (a loaded pipeline) here: its input measured, its stages at the
    capacity model's rates, its proxy section (``proxy``: when asked and present) at this machine's speed."""
    from curate.pipeline.config import build_source

    engine = engine or cfg.engine.kind
    cores = cores_of(cfg, engine)
    source = build_source(cfg)
    inp = measure_input(source)
    names, driver = pipeline_stage_names(cfg)
    read = Rate(
        inp.read_bytes / MB / max(inp.read_cpu_s, 1e-3),
        f"measured here: {inp.read_bytes / MB:,.1f} MB read in {inp.read_cpu_s:.1f} CPU-s",
    )
    notes: list[str] = []
    target_cpu_s = 0.0
    if cfg.target is not None:
        # The target pass reads the whole input once more (a costly source keeps its batches for segment
        # 0, whose read is then one of Parquet files); the fits themselves are not in the estimate.
        target_cpu_s = inp.bytes / MB / read.mb_per_core_s
        notes.append("target: one more read of the input (the target sample), its scorers' fits not included")
    cached = cfg.target is not None and getattr(source, "costly_read", False)
    counting = _token_counting(cfg, inp, cores)
    plan = project(
        names,
        docs=inp.docs,
        nbytes=max(1, inp.bytes),
        nodes=1,
        cores=cores,
        driver_components=driver,
        engine=engine,
        measured={} if cached else {"read": read},
    )
    if counting is not None:
        plan.stages.append(counting)
    est, settings = None, []
    if proxy and cfg.proxy is not None:
        evals, how = eval_tokens(cfg.proxy, cfg.path, inp)
        est = estimate_proxy(cfg.proxy, evals=evals, input_bytes=inp.bytes, cores=cores, evals_how=how)
        settings = settings_lines(cfg.proxy, est)
    return RunEstimate(inp, plan, est, settings, cores, engine, os.getloadavg()[0], target_cpu_s, notes)


def _token_counting(cfg: Any, inp: InputSize, cores: int) -> StagePlan | None:
    """The funnel's token counts, in no stage's rate: the run's counter (:func:`curate.runtime.tokens.token_counter`)
    timed here on the input's sample, once over the input and again after each transform (it rewrites the
    text, whose rows are counted again)."""
    import pyarrow as pa

    from curate.pipeline.config import build_stages
    from curate.runtime.tokens import token_counter, unit_label

    sample = inp.sample
    if not sample:
        return None
    counter = token_counter(
        {"tokenizer": cfg.export.tokenizer} if cfg.export else None,
        proxy_tokenizer=getattr(cfg.proxy, "tokenizer_path", None),
    )
    text = pa.array(sample)
    counter.per_row(text[:1])  # a tokenizer loads on first use
    c0 = time.process_time()
    counter.per_row(text)
    cpu = max(time.process_time() - c0, 1e-6)
    mb = sum(len(x.encode()) for x in sample) / MB
    passes = 1 + sum(1 for st in build_stages(cfg) if st.kind == "transform")
    core_s = inp.bytes / MB * passes * cpu / mb
    source = (
        f"measured here: {mb:,.1f} MB counted in {cpu:.2f} CPU-s; {passes} pass{'es' if passes != 1 else ''} "
        "(the input, and again after each transform)"
    )
    return StagePlan(
        name=f"tokens ({unit_label(counter.unit)})", core_s=core_s, wall_s=core_s / cores, source=source
    )


def _bytes(n: float) -> str:
    return next(
        f"{n / f:,.1f} {u}" for f, u in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B")) if n >= f or f == 1
    )


def _dur(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.1f} min" if s >= 120 else f"{s:.0f} s"


def load_factor(load: float, busy: int, cores: int) -> float:
    """How much longer than on free cores: ``busy`` processes of ours and ``load`` others' share
    ``cores`` (each of ours gets ``cores / (load + busy)`` of a core, at most one)."""
    return max(1.0, (load + busy) / max(1, cores))


def format_estimate(e: RunEstimate) -> str:
    """The estimate as the terminal prints it before a run."""
    inp, plan = e.input, e.curation
    how = (
        "read in full"
        if inp.exact
        else f"{inp.read} of {inp.shards} shards read, the rest scaled by file size"
    )
    core_s = e.curation_cpu_s
    stages = sum(1 for s in plan.stages if not s.name.startswith("tokens ("))
    lines = [
        f"estimate on this machine ({e.cores} core{'s' if e.cores != 1 else ''}, {e.engine} engine, load {e.load:.1f}):",
        f"  input: {inp.docs:,} documents, {_bytes(inp.bytes)} of text ({how})",
        f"  curation: ~{core_s:,.0f} CPU-s, ~{_dur(e.curation_wall_s)} wall: {stages} stages at the "
        f"rates of BENCHMARKS.md (one core, not measured here) but the read's (measured here: "
        f"{_bytes(inp.read_bytes)} in {inp.read_cpu_s:.1f} CPU-s), and the token counts (measured here); "
        f"bottleneck {plan.bottleneck.name}" + ("; Ray's start-up included" if e.engine == "ray" else ""),
    ]
    slow = [s for s in plan.stages if s.core_s >= 0.2 * core_s and s.core_s > 10]
    for s in slow:
        lines.append(f"    {s.name}: ~{s.core_s:,.0f} CPU-s ({s.source})")
    lines += [f"    note: {n}" for n in plan.notes + e.notes]
    p = e.proxy
    if p is not None:
        lines.append(
            f"  proxy phase: ~{p.cpu_s:,.0f} CPU-s, ~{_dur(p.wall_s)} wall ({sum(p.run_cpu_s):,.0f} CPU-s in "
            f"{len(p.runs)} runs, {p.prep_cpu_s:,.0f} preparing data, {p.start_cpu_s:,.0f} starting workers)"
        )
        lines += [f"    {x}" for x in e.proxy_settings]
        lines += [f"    note: {n}" for n in p.notes]
    machine = os.cpu_count() or e.cores
    factor = load_factor(e.load, e.cores, machine)  # our busy processes: one per core the engine uses
    if factor > 1.2:
        lines.append(
            f"  the load now ({e.load:.1f} on {machine} cores) leaves this run a share of them: "
            f"expect the wall times up to ~{factor:.1f}x longer (CPU-seconds move less)"
        )
    return "\n".join(lines)

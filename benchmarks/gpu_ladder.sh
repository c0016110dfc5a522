#!/usr/bin/env bash
# The proxy ladder on a GPU machine, proxy_tiny up to the largest size (proxy_90m), in at most 10 minutes.
#
#   benchmarks/gpu_ladder.sh [OUT_ROOT]        # default OUT_ROOT: benchmarks/results
#
# Needs: this project installed with the CUDA build of torch 2.13.0 (docs/cluster.md section 6), one
# or more CUDA GPUs, and ../shared/corpora/web (four real web corpora, 14 M characters). It runs
# `curate run` (embedded Ray, which sees the GPUs) of the web heuristic recipe with a proxy: section
# whose main point is proxy_90m and whose ladder points are the five smaller sizes, every run on the GPU
# (gpu_fraction 0.25: four runs share one). The run is stopped at 600 s (`timeout`), so the ladder
# either finishes within 10 minutes or the results say it did not.
#
# Writes OUT_ROOT/gpu_ladder-<UTC time>/: pipeline.yaml, command.txt, machine.txt (nvidia-smi, torch,
# CPU, load), wall_s.txt, runs.md (per ladder point and recipe: device, tokens/s, final bpb), goodput.json
# and report.md, and the run directory itself (run/). BENCHMARKS.md cites runs.md and wall_s.txt.
#
# GPU_LADDER_SMOKE=1 checks the script's mechanics on a CPU machine in about a minute (proxy_tiny and
# proxy_1m only, tiny budgets, no GPU needed); its numbers measure nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${1:-benchmarks/results}/gpu_ladder-$STAMP
CORPORA=../shared/corpora/web
mkdir -p "$OUT/in"
for f in c4_en webtext news commoncrawl_2019; do
  [ -f "$CORPORA/$f.jsonl.gz" ] || { echo "gpu_ladder: $CORPORA/$f.jsonl.gz is missing (needs ../shared/corpora)" >&2; exit 2; }
  ln -s "$(realpath "$CORPORA/$f.jsonl.gz")" "$OUT/in/$f.jsonl.gz"
done

if [ "${GPU_LADDER_SMOKE:-0}" = 1 ]; then
  MAIN="model: proxy_1m
  budget: 16384"
  LADDER="    - {model: proxy_tiny, budget: 8192, seeds: 1}"
  SEEDS=1; TRAIN="{seq_len: 64, batch_size: 8, n_evals: 3}"
else
  "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu_ladder: torch sees no CUDA device (install the CUDA build: docs/cluster.md section 6), or set GPU_LADDER_SMOKE=1')"
  # Budgets sized for one H100/H200-class GPU (not yet measured: the first run of this script is the
  # measurement). raw trains to 2T for its curve; curated and the null control to T; 2 seeds.
  MAIN="model: proxy_90m
  budget: 4000000"
  LADDER="    - {model: proxy_tiny, budget: 1000000, seeds: 2}
    - {model: proxy_1m, budget: 1000000, seeds: 2}
    - {model: proxy_5m, budget: 2000000, seeds: 2}
    - {model: proxy_14m, budget: 2000000, seeds: 2}
    - {model: proxy_30m, budget: 2000000, seeds: 2}"
  SEEDS=2; TRAIN="{seq_len: 256, batch_size: 32, n_evals: 5}"
fi

cat > "$OUT/pipeline.yaml" <<YAML
name: gpu_ladder
input: {path: '$(realpath "$OUT/in")/*.jsonl.gz', format: jsonl}
stages:
  - transform: normalize_v1
  - dedup: exact_dedup_v1
  - filter: gopher_repetition_v1
  - filter: gopher_quality_v1
  - filter: c4_quality_v1
  - filter: fineweb_quality_v1
  - dedup: minhash_dedup_v1
proxy:
  $MAIN
  seeds: $SEEDS
  tokenizer: {vocab_size: 8192}
  recipes:
    raw: {from: raw}
    curated: {from: kept}
  controls: [null]
  eval:
    - {name: heldout, holdout: 0.02}
  ladder:
$LADDER
  train: $TRAIN
  gpu_fraction: 0.25
YAML

{
  date -u; uptime; nproc
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "nvidia-smi: none"
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())"
} > "$OUT/machine.txt" 2>&1
CMD=("$PY" -m curate run "$OUT/pipeline.yaml" --output "$OUT/run" --engine ray -q)
echo "timeout 600 ${CMD[*]}" > "$OUT/command.txt"
T0=$(date +%s)
set +e
timeout 600 "${CMD[@]}"
RC=$?
set -e
echo "$(( $(date +%s) - T0 )) s, exit $RC$([ $RC = 124 ] && echo ' (stopped at the 600 s limit: the ladder did not finish in 10 minutes)')" > "$OUT/wall_s.txt"
cp "$OUT/run/goodput.json" "$OUT/run/report.md" "$OUT/" 2>/dev/null || true
"$PY" - "$OUT" <<'PY'
"""runs.md: one row per proxy run (ladder point, recipe, seed) from its result.json."""
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
rows = ["| point | recipe | seed | device | tokens | tokens/s | final bpb (heldout) |", "| --- | --- | ---: | --- | ---: | ---: | ---: |"]
proxy = out / "run" / "proxy"
for res in sorted(proxy.rglob("result.json")) if proxy.exists() else []:
    r = json.loads(res.read_text())
    rel = res.relative_to(proxy).parts
    point = rel[1] if rel[0] == "ladder" else "main"
    recipe, seed = rel[-3], rel[-2]
    tps = r.get("tokens_per_s")
    bpb = (r.get("final_bpb") or {}).get("heldout")
    rows.append(
        f"| {point} | {recipe} | {seed.removeprefix('seed')} | {r.get('device')} | {r.get('tokens'):,} | "
        f"{tps:,.0f} | {bpb:.4f} |" if tps and bpb is not None else f"| {point} | {recipe} | {seed} | {r.get('device')} | | | |"
    )
(out / "runs.md").write_text("\n".join(rows) + "\n")
print("\n".join(rows))
PY
cat "$OUT/wall_s.txt"
echo "results: $OUT"
exit $RC

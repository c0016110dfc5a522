#!/usr/bin/env bash
# The transfer study's larger points on one GPU, in at most 10 minutes.
#
#   benchmarks/gpu_ladder.sh [OUT_ROOT]        # default OUT_ROOT: benchmarks/results
#
# Needs: this project installed with the CUDA build of torch 2.13.0 (docs/cluster.md section 6), one
# CUDA GPU, and ../shared/corpora (the web files, the Wikipedia target and the web targets' eval files).
# It runs `curate run pipelines/transfer_ladder.yaml` (embedded Ray, which sees the GPU): the same input,
# stages, twenty-five recipes and controls as the CPU study (benchmarks/transfer_ladder.py), whose main point is
# the web reference point (proxy_1m@294,912) and whose ladder goes on where the CPU stops: proxy_5m at
# the CPU study's top (1,638,400 tokens, 30x the reference point's compute), proxy_14m at 3,276,800 and
# proxy_30m at 6,553,600 (~835x); three seeds each, none shared with another point (the pipeline's
# proxy.disjoint_seeds); four runs share the GPU (gpu_fraction 0.25). The run
# is stopped at 600 s (`timeout`), so the ladder either finishes within 10 minutes or wall_s.txt says it
# did not; finished runs are kept, so running it again resumes.
#
# Writes OUT_ROOT/gpu_ladder-<UTC time>/: command.txt, machine.txt (nvidia-smi, torch, CPU, load),
# wall_s.txt, runs.md (per ladder point and recipe: device, tokens/s, final bpb), goodput.json, report.md,
# study.json and study.svg (benchmarks/transfer_ladder.py: decision accuracy against the top point with
# the noise ceiling and chance, the trend of each multiplier with compute, cost) and the run directory
# itself (run/). No GPU figure is claimed without this run.
#
# GPU_LADDER_SMOKE=1 checks the script's mechanics on a CPU machine (tiny points: proxy_tiny and
# proxy_1m, a few thousand tokens, two seeds, no GPU needed); its numbers measure nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${1:-benchmarks/results}/gpu_ladder-$STAMP
mkdir -p "$OUT"
[ -f ../shared/corpora/clean/wikipedia.jsonl.gz ] || { echo "gpu_ladder: ../shared/corpora is missing" >&2; exit 2; }

if [ "${GPU_LADDER_SMOKE:-0}" = 1 ]; then
  SETS=(--set proxy.model=proxy_tiny --set proxy.budget=8192 --set proxy.seeds=2
        --set 'proxy.ladder=[{model: proxy_1m, budget: 16384, seeds: 2}]'
        --set 'proxy.train={seq_len: 64, batch_size: 8, n_evals: 3, lr: 0.001}'
        --set input.limit=300 --set target.max_docs=200 --set target.raw_docs=400)
else
  "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'gpu_ladder: torch sees no CUDA device (install the CUDA build: docs/cluster.md section 6), or set GPU_LADDER_SMOKE=1')"
  # Budgets not yet measured on a GPU: the first run of this script is the measurement.
  SETS=(--set 'proxy.ladder=[{model: proxy_5m, budget: 1638400, seeds: 3}, {model: proxy_14m, budget: 3276800, seeds: 3}, {model: proxy_30m, budget: 6553600, seeds: 3}]'
        --set proxy.gpu_fraction=0.25)
fi

{
  date -u; uptime; nproc
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "nvidia-smi: none"
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())"
} > "$OUT/machine.txt" 2>&1
CMD=("$PY" -m curate run pipelines/transfer_ladder.yaml --output "$OUT/run" --engine ray -q "${SETS[@]}")
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
if [ -f "$OUT/run/goodput.json" ]; then
  "$PY" benchmarks/transfer_ladder.py "$OUT/run" --json "$OUT/study.json" --svg "$OUT/study.svg" || true
fi
cat "$OUT/wall_s.txt"
echo "results: $OUT"
exit $RC

"""Run by test_multinode.py in a fresh process: dedup on a 2-node local Ray cluster vs the inline engine.

Prints one JSON line with the two outputs' equality per stage.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

# Run as a script (``python tests/dedup/multinode_check.py``): the repository root makes ``tests`` importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.dedup.dedup_helpers import column, run_global, split
from tests.helpers import make_table


def main() -> None:
    from ray.cluster_utils import Cluster

    from curate.core.engine import InlineEngine, RayEngine
    from curate.dedup.exact import ExactDedup
    from curate.dedup.lines import LineDedup
    from curate.dedup.minhash import MinhashDedup, MinhashParams

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(300)]
    base = [" ".join(rng.choice(words, 80)) for _ in range(60)]
    texts = base + [t.upper() for t in base[:20]] + ["changed " + t.split(" ", 1)[1] for t in base[20:40]]
    texts = [f"Menu | Home\n{t}\nFooter line (c)" for t in texts]
    table = make_table(texts)
    sizes = [30, 40, 30, 0]
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    cluster.add_node(num_cpus=1)
    engine = RayEngine(address=cluster.address, progress=False)
    nodes = engine.describe()["nodes"]
    out = {"nodes": nodes}
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in {
            "exact": ExactDedup,
            "minhash": lambda: MinhashDedup(MinhashParams(verify=True)),
            "lines": LineDedup,
        }.items():
            a, _ = run_global(make(), split(table, sizes), InlineEngine(), Path(tmp) / f"{name}-a")
            b, _ = run_global(make(), split(table, sizes), engine, Path(tmp) / f"{name}-b")
            cols = [c for c in a[0].column_names if c != "source"]
            out[name] = all(column(a, c) == column(b, c) for c in cols)
            out[f"{name}_rejected"] = sum(r is not None for r in column(b, "__reject__"))
    print("RESULT " + json.dumps(out), flush=True)
    import ray

    ray.shutdown()  # the engine does not own a runtime it attached to
    cluster.shutdown()


if __name__ == "__main__":
    main()

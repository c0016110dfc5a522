"""diversity_v1: near-duplicates within the set and against a seed set."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.scorers.diversity import Diversity, DiversityParams
from curate.scorers.minhash_local import minhash_signatures
from tests.helpers import make_table

A = "the quick brown fox jumps over the lazy dog and runs into the forest today"
SEED = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"


def test_signature_estimates_jaccard():
    sig = minhash_signatures(pa.array([A, A.replace("today", "now"), SEED, ""]), num_perm=256)
    # 5-gram shingles: 11 each, 10 shared -> Jaccard 10/12
    assert abs((sig[0] == sig[1]).mean() - 10 / 12) < 0.08
    assert (sig[0] == sig[2]).mean() < 0.05
    assert (sig[3] == 0xFFFFFFFF).all()
    # batching does not change a signature
    assert (minhash_signatures(pa.array([A]), num_perm=256)[0] == sig[0]).all()


def test_within_and_seed(tmp_path):
    seed_file = tmp_path / "seed.jsonl"
    seed_file.write_text(json.dumps({"id": "s1", "text": SEED}) + "\n")
    table = make_table(
        [A, "unrelated words that share nothing with the others at all here", A + " again", SEED + " nu", A],
        ids=["a", "u", "a2", "c", "a3"],
    )
    stage = Diversity(DiversityParams(seed_path=str(seed_file), threshold=0.7))
    pq.write_table(stage.collect(table.slice(0, 2)), tmp_path / "k0.parquet")
    pq.write_table(stage.collect(table.slice(2)), tmp_path / "k1.parquet")
    state = stage.reduce([str(tmp_path / "k0.parquet"), str(tmp_path / "k1.parquet")], engine=None)
    out = stage.apply(table, state)
    assert out.column("__reject__").to_pylist() == [
        None,
        None,
        "diversity_v1:near_duplicate",
        "diversity_v1:copies_seed",
        "diversity_v1:near_duplicate",
    ]
    assert out.column("duplicate_of").to_pylist() == [None, None, "a", None, "a"]
    assert out.column("diversity_v1.max_sim_within").to_pylist()[4] == 1.0
    assert out.column("diversity_v1.max_sim_seed").to_pylist()[3] >= 0.7
    assert stage.summary(state) == {"documents": 5, "near_duplicates": 2, "copies_seed": 1}
    assert np.isclose(out.column("diversity_v1.max_sim_within").to_pylist()[1], 0.0)

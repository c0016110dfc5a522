"""benchmarks/transfer_ladder.py: the study's numbers are read from the ladder block as they stand."""

from __future__ import annotations

import json

import pytest

from benchmarks import transfer_ladder


def _point(name, compute, device_s, mults, acc=None, ci=None, called=()):
    return {
        "name": name,
        "model": name.split("@")[0],
        "budget": int(name.split("@")[1]),
        "seeds": [0, 1, 2],
        "params": 1e6,
        "tokens_per_param": 0.3,
        "compute_flops_per_run": compute,
        "device_s": device_s,
        "recipes": {
            r: {
                "multiplier": {"value": v, "ci_low": lo, "ci_high": hi, "bounds": {}},
                "call": c,
                "per_seed_bpb_at_T": [3.0 + v / 10, 3.1 + v / 10, 2.9 + v / 10],
            }
            for r, (v, lo, hi, c) in mults.items()
        },
        "called_pairs": [{"a": a, "b": b, "separated": True} for a, b in called],
        "mde_multiplier": {"worse": 0.8, "better": 1.2},
        "decision_accuracy_vs_reference": acc,
        "decision_accuracy_ci": ci,
        "decision_pairs": 2,
    }


G = {
    "baseline": "raw",
    "recipes": {"raw": {"role": "baseline"}, "curated": {"role": "recipe"}, "null": {"role": "control"}},
    "ladder": {
        "reference": "proxy_5m@1000",
        "points": [
            _point(
                "proxy_5m@1000",
                30e12,
                6000.0,
                {"curated": (1.2, 1.1, 1.3, "better"), "null": (1.0, 0.9, 1.1, "not_called")},
                called=[("curated", "raw")],
            ),
            _point(
                "proxy_1m@100",
                1e12,
                360.0,
                {"curated": (1.5, 1.35, 1.7, "better"), "null": (1.0, 0.8, 1.2, "not_called")},
                acc=0.5,
                ci=[0.0, 1.0],
            ),
        ],
    },
}


def test_summarize_orders_points_by_compute_and_reads_accuracy_and_cost():
    s = transfer_ladder.summarize(G)
    assert [p["name"] for p in s["points"]] == ["proxy_1m@100", "proxy_5m@1000"]
    assert s["compute_ratio_top_vs_cheapest"] == pytest.approx(30.0)
    assert s["reference"] == "proxy_5m@1000"
    cheap, top = s["points"]
    assert cheap["compute_x_cheapest"] == 1.0
    assert cheap["decision_accuracy"] == 0.5
    assert cheap["decision_accuracy_ci"] == [0.0, 1.0]
    assert cheap["decision_accuracy_per_cpu_hour"] == pytest.approx(0.5 / 0.1)
    assert top["decision_accuracy"] is None
    assert top["called_pairs"] == ["curated vs raw"]
    # every recipe's bpb per seed is kept, so the decision accuracy's bootstrap can be recomputed
    assert top["recipes"]["curated"]["per_seed_bpb_at_T"] == [3.12, 3.22, 3.02]
    # curated's multiplier falls from 1.5x to 1.2x and the intervals are apart; the control is no recipe
    assert s["multiplier_trend"] == {
        "curated": {"cheapest": 1.5, "top": 1.2, "falls": True, "intervals_overlap": False}
    }
    table = transfer_ladder.table(s)
    assert "| proxy_1m@100 | 1.0x | 360 | 1.50x (1.35–1.70) better |" in table
    assert "50% [0%, 100%] of 2 |" in table


def test_one_point_is_refused(tmp_path):
    one = {**G, "ladder": {**G["ladder"], "points": G["ladder"]["points"][:1]}}
    with pytest.raises(SystemExit, match="fewer than two ladder points"):
        transfer_ladder.summarize(one)


def test_the_command_writes_the_json_and_the_figure(tmp_path, monkeypatch, capsys):
    (tmp_path / "goodput.json").write_text(json.dumps(G))
    out, svg = tmp_path / "study.json", tmp_path / "fig.svg"
    monkeypatch.setattr(
        "sys.argv", ["transfer_ladder.py", str(tmp_path), "--json", str(out), "--svg", str(svg)]
    )
    transfer_ladder.main()
    s = json.loads(out.read_text())
    assert s["command"] == f"python benchmarks/transfer_ladder.py {tmp_path.name}"
    assert s["points"][0]["decision_accuracy"] == 0.5
    assert svg.read_text().startswith(f"<!-- {s['date']}, {s['commit']}, ")
    assert ">decision accuracy</text>" in svg.read_text()
    assert (
        "curated: 1.50x at the cheapest point, 1.20x at the top (falls; intervals apart)"
        in capsys.readouterr().out
    )

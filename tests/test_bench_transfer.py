"""benchmarks/transfer_ladder.py: the study's JSON from a ladder run's per-seed values, on values whose answer
is known (a cheap point that ranks as the top point does, one that reverses every pair, a pair the top
point cannot tell from a tie), recomputed from the JSON alone, with every point's seeds disjoint."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from benchmarks import transfer_ladder
from curate.proxy.statistics import transfer
from tests.ladder_fixture import LEVELS, MAIN, REVERSED, TOP, G, ladder_goodput, ladder_point


def test_the_study_reads_each_point_and_scores_the_known_answers():
    s = transfer_ladder.summarize(G, draws=200)
    assert [p["name"] for p in s["points"]] == ["proxy_1m@100", "proxy_1m@400", "proxy_5m@1000"]
    assert [p["compute"] for p in s["points"]] == [1.0, 4.0, 30.0]
    assert [p["cpu_s"] for p in s["points"]] == [360.0, 900.0, 6000.0]
    assert (s["main"], s["reference"], s["baseline"], s["controls"]) == (
        "proxy_1m@100",
        "proxy_5m@1000",
        "raw",
        ["null"],
    )
    assert s["recipes"] == ["raw", "a", "b", "c", "tie"]  # the control is no member of a pair
    assert len(s["pairs"]) == 10
    tie = next(p for p in s["pairs"] if (p["a"], p["b"]) == ("raw", "tie"))
    assert (tie["diff_bpb"], tie["weight"], tie["called"]) == (0.0, 0.0, False)
    assert tie["agrees"] == {"proxy_1m@100": False, "proxy_1m@400": False}
    main, rev = s["decision_accuracy"]["proxy_1m@100"], s["decision_accuracy"]["proxy_1m@400"]
    assert main["all_pairs_weighted"]["value"] == 1.0  # the one pair it orders otherwise weighs nothing
    assert main["called"]["value"] == 1.0
    assert (main["all_pairs_weighted"]["pairs"], main["called"]["pairs"]) == (10, 9)
    assert rev["all_pairs_weighted"]["value"] == 0.0
    assert rev["called"]["value"] == 0.0
    assert s["chance"] == 0.5
    assert (s["noise_ceiling"]["splits"], s["noise_ceiling"]["seeds_per_half"]) == (20, [3])
    assert "proxy_5m@1000" not in s["decision_accuracy"]  # the reference agrees with itself: nothing measured
    # the point to use: the cheapest, which ranks as the top point does (the 4x point reverses every pair)
    assert s["choice"]["point"] == "proxy_1m@100"
    assert s["choice"]["passed_over"] == {}
    assert s["choice"]["differences"]["proxy_1m@400 - proxy_1m@100"]["value"] == -1.0
    # the headline width as the study reads it, then at other seeds of its bootstrap and with ten times the draws
    hw = s["headline_width"]
    main_ci = main["all_pairs_weighted"]["ci"]
    assert hw["study"] == main_ci[1] - main_ci[0]
    assert sorted(hw["other_seeds"]) == ["1", "2", "3", "4", "5"]
    assert hw["more_draws"]["draws"] == 2000
    assert 0 < hw["more_draws"]["width"] <= 1
    assert "headline interval width " in transfer_ladder.table(s)
    # every recipe's bpb per seed is kept, at every point
    assert s["points"][2]["recipes"]["a"]["per_seed_bpb_at_T"] == TOP["recipes"]["a"]["per_seed_bpb_at_T"]


def test_the_accuracies_recompute_from_the_json_alone_and_the_seeds_are_disjoint():
    s = json.loads(json.dumps(transfer_ladder.summarize(G, draws=200)))
    seeds = [set(p["seeds"]) for p in s["points"]]
    assert all(not (x & y) for x, y in itertools.combinations(seeds, 2))
    assert (s["seeds_disjoint"], s["shared_seeds"]) == (True, {})
    pts = {p.name: p for p in transfer_ladder.study_points(s["points"], s["recipes"])}
    top = pts[s["reference"]]
    for name, acc in s["decision_accuracy"].items():
        assert transfer.decision_accuracy(pts[name], top, s["recipes"], draws=200) == acc
    assert transfer.noise_ceiling(top, s["recipes"], draws=200) == s["noise_ceiling"]
    others = [pts[p["name"]] for p in s["points"] if p["name"] != s["reference"]]
    again = transfer.point_choice(others, top, s["recipes"], s["decision_accuracy"], draws=200)
    assert again == s["choice"]


def test_the_trend_table_gives_each_recipes_multiplier_per_point_and_its_verdict():
    s = transfer_ladder.summarize(G, draws=200)
    rows = transfer_ladder.trend_table(s).splitlines()
    assert (
        rows[0] == "| recipe | proxy_1m@100 | proxy_1m@400 | proxy_5m@1000 | per doubling | Holm p | trend |"
    )
    # "a" is 1/8 bpb below raw at 0.25 bpb per doubling of tokens: 2**0.5 at the points that rank as the top
    # does, its inverse where the middle point reverses every pair; no trend over three points
    assert rows[2] == (
        "| a | 1.41x [1.40, 1.43] | 0.71x [0.70, 0.72] | 1.41x [1.40, 1.42] | x1.031 [0.962, 1.106] | 1 | "
        "not shown either way (detectable: x0.888 / x1.126) |"
    )
    assert rows[-1] == (
        "over 30.0x of compute (3 points): 0 of 4 recipes fade (Holm, 5%), 0 grow, 4 show no trend either "
        "way at these seeds"
    )
    # a point with seeds beyond the measured curve shows its values as bounds, the recipe untested
    v = s["trend"]["recipes"]["c"]
    v["points"][2]["censored"], v["verdict"] = 2, "bounded"
    row = next(r for r in transfer_ladder.trend_table(s).splitlines() if r.startswith("| c |"))
    assert "0.71x [0.69, 0.72] (2 of 6 seeds beyond the curve: bounds)" in row
    assert row.endswith("| not tested |")


def test_shared_seeds_are_recorded_and_warned_about():
    shared = ladder_goodput(
        [
            ladder_point("proxy_1m@100", 1e12, range(4), 360.0),
            TOP,
            ladder_point("proxy_1m@400", 4e12, [0, 1, 8, 9], 900.0),
        ]
    )
    s = transfer_ladder.summarize(shared, draws=0)
    assert s["seeds_disjoint"] is False
    assert s["shared_seeds"] == {
        "0": ["proxy_1m@100", "proxy_1m@400"],
        "1": ["proxy_1m@100", "proxy_1m@400"],
        "8": ["proxy_1m@400", "proxy_5m@1000"],
        "9": ["proxy_1m@400", "proxy_5m@1000"],
    }
    assert "warning: the points share seeds" in transfer_ladder.table(s)


def test_one_point_is_refused():
    with pytest.raises(SystemExit, match="fewer than two ladder points"):
        transfer_ladder.summarize(ladder_goodput([TOP]))


def test_an_unfinished_run_is_refused_with_how_far_it_got(tmp_path):
    for point, recipe, seed in (("", "raw", 0), ("ladder/big@8/", "raw", 1), ("ladder/big@8/", "curated", 1)):
        run = tmp_path / "proxy" / f"{point}{recipe}" / f"seed{seed}"
        run.mkdir(parents=True)
        (run / "result.json").write_text("{}")
    (tmp_path / "proxy" / "curated" / "seed0").mkdir(parents=True)  # started, not finished
    with pytest.raises(SystemExit, match=r"goodput.json does not exist: .* \(3 proxy runs finished under "):
        transfer_ladder.read_goodput(tmp_path)


def test_the_command_writes_the_json_and_the_figure(tmp_path, monkeypatch, capsys):
    # goodput.json as the proxy phase writes it: each cheaper point's decision accuracy, the ceiling, chance
    pts = {p.name: p for p in transfer_ladder.study_points([MAIN, REVERSED, TOP], list(LEVELS))}
    ladder = {
        **G["ladder"],
        "points": [
            {
                **p,
                "decision_accuracy": transfer.decision_accuracy(
                    pts[p["name"]], pts[TOP["name"]], list(LEVELS)
                ),
            }
            if p is not TOP
            else p
            for p in G["ladder"]["points"]
        ],
        "noise_ceiling": transfer.noise_ceiling(pts[TOP["name"]], list(LEVELS)),
        "chance": 0.5,
    }
    (tmp_path / "goodput.json").write_text(json.dumps({**G, "ladder": ladder}))
    out, svg = tmp_path / "study.json", tmp_path / "fig.svg"
    argv = [str(tmp_path), "--json", str(out), "--svg", str(svg)]
    monkeypatch.setattr("sys.argv", ["transfer_ladder.py", *argv])
    transfer_ladder.main()
    s = json.loads(out.read_text())
    assert s["command"] == "python benchmarks/transfer_ladder.py " + " ".join(argv)
    for key in (
        "date",
        "commit",
        "cpu",
        "load",
        "points",
        "pairs",
        "decision_accuracy",
        "noise_ceiling",
        "chance",
        "choice",
        "trend",
    ):
        assert key in s
    assert len(s["load"]) == 3
    # reversed: 0, its interval wide with five recipes (a draw of raw and "tie" alone agrees by chance)
    lo, hi = s["decision_accuracy"]["proxy_1m@400"]["all_pairs_weighted"]["ci"]
    assert lo == 0.0 < hi < 0.5
    assert s["decision_accuracy"]["proxy_1m@400"]["called"]["ci"] == [0.0, 0.0]
    # well-formed XML (a browser refuses a figure that is not), the stamp its description
    desc = ElementTree.parse(svg).getroot().find("{http://www.w3.org/2000/svg}desc")
    assert desc is not None
    assert desc.text == f"{s['date']}, {s['commit']}, {s['cpu']}, {s['command']}"
    assert "--json" in desc.text
    assert ">decision accuracy</text>" in svg.read_text()
    assert ">noise ceiling</text>" in svg.read_text()
    printed = capsys.readouterr().out
    assert "| proxy_1m@100 | 1.0x | 360 | 4 (0-3) | 100% [" in printed
    assert "| proxy_5m@1000 | 30.0x | 6,000 | 6 (8-13) | reference | reference |" in printed
    assert "noise ceiling (the top point's seeds in halves, 20 splits): every pair " in printed
    assert s["trend"]["summary"] in printed
    assert "point to use: proxy_1m@100: the cheapest point shown above chance (100% [" in printed


# the committed study: the web input, 25 recipes over three points (docs/goodput.md, the transfer study)
STUDY = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "transfer_ladder-web-2026-12-08.json"


@pytest.fixture(scope="module")
def committed():
    s = json.loads(STUDY.read_text())
    return s, {p.name: p for p in transfer_ladder.study_points(s["points"], s["recipes"])}


def test_the_committed_study_meets_its_floors(committed):
    s, _ = committed
    assert len(s["recipes"]) == 25
    assert "raw" in s["recipes"]
    assert len(s["pairs"]) == 300  # every pair of the 25: the floor is 28
    assert [len(p["seeds"]) for p in s["points"]] == [8, 4, 6]  # >= 4 at the top point
    seeds = [set(p["seeds"]) for p in s["points"]]
    assert all(not (x & y) for x, y in itertools.combinations(seeds, 2))
    assert (s["seeds_disjoint"], s["shared_seeds"]) == (True, {})
    assert s["points"][0]["compute"] == 1.0
    assert s["points"][-1]["compute"] >= 30
    for p in s["points"]:
        assert p["cpu_s"] > 0
        for r in s["recipes"]:
            assert len(p["recipes"][r]["per_seed_bpb_at_T"]) == len(p["seeds"])
    head = s["decision_accuracy"][s["main"]]["all_pairs_weighted"]
    assert head["ci"][1] - head["ci"][0] <= 0.25  # the headline interval's floor
    for acc in s["decision_accuracy"].values():
        assert acc["all_pairs_weighted"]["ci"] is not None
        assert acc["called"]["ci"] is not None
    assert s["noise_ceiling"]["all_pairs_weighted"]["ci"] is not None


def test_the_committed_study_recomputes_from_its_per_seed_values(committed):
    s, pts = committed
    top = pts[s["reference"]]
    others = [pts[p["name"]] for p in s["points"] if p["name"] != s["reference"]]
    for name, acc in s["decision_accuracy"].items():
        assert transfer.decision_accuracy(pts[name], top, s["recipes"]) == acc
    assert transfer.noise_ceiling(top, s["recipes"]) == s["noise_ceiling"]
    assert transfer.point_choice(others, top, s["recipes"], s["decision_accuracy"]) == s["choice"]
    assert transfer.pairs(top, s["recipes"], others) == s["pairs"]
    assert (
        json.loads(json.dumps(transfer.trend(list(pts.values()), s["recipes"], s["baseline"]))) == s["trend"]
    )
    # the headline width's Monte Carlo check: the study's own width, five other bootstrap seeds, 20,000 draws
    again = transfer_ladder.headline_width(
        list(pts.values()), s["recipes"], s["main"], s["decision_accuracy"][s["main"]]
    )
    assert again == s["headline_width"]
    assert again["more_draws"]["width"] > 0.25  # the floor is missed, as the documents say

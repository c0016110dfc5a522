"""The ladder chart stays readable with a study's many recipes: every recipe a line of its own look, named
once in a legend beside the axes, the intervals at one point moved apart instead of drawn over each other."""

from __future__ import annotations

import copy
import math
import re

from curate.report import charts
from tests.ladder_fixture import G


def _many(n: int) -> dict:
    """The transfer test's ladder with ``n`` recipes more, each its own multiplier at every point."""
    g = copy.deepcopy(G)
    names = [f"recipe_{i:02d}" for i in range(n)]
    for p in g["ladder"]["points"]:
        for i, name in enumerate(names):
            r = copy.deepcopy(p["recipes"]["a"])
            v = 0.8 + 0.03 * i
            r["multiplier"] = {"value": v, "ci_low": v * 0.9, "ci_high": v * 1.1, "bounds": {}}
            p["recipes"][name] = r
    g["recipes"].update({name: {"role": "recipe"} for name in names})
    return g


def test_sixty_lines_all_look_different():
    looks = [tuple(sorted(charts.series_style(i).items())) for i in range(60)]
    assert len(set(looks)) == 60
    assert charts.series_style(0) == {"color": "C0", "marker": "o", "linestyle": "-"}
    assert charts.series_style(13) == {"color": "C3", "marker": "s", "linestyle": "--"}


def test_the_series_are_moved_apart_symmetrically_and_in_legend_order():
    n = 25
    f = [charts.dodge(i, n) for i in range(n)]
    assert f == sorted(f)
    assert f[12] == 1.0  # the middle series stays on its point
    assert math.isclose(f[0] * f[-1], 1.0, rel_tol=1e-12)  # as far left as right, on a log axis
    assert math.isclose(f[-1], 10 ** (0.006 * 12), rel_tol=1e-12)  # 18% at most
    assert charts.dodge(0, 1) == 1.0


def test_a_legend_of_many_recipes_goes_beside_the_axes_in_columns():
    assert charts.legend_placement(8) == {"fontsize": 8, "frameon": False}
    assert charts.legend_placement(9)["ncol"] == 1
    assert charts.legend_placement(28)["ncol"] == 2
    assert charts.legend_placement(29)["ncol"] == 3
    assert charts.legend_placement(29)["bbox_to_anchor"] == (1.01, 1.0)


def test_a_ladder_of_thirty_recipes_names_each_once_and_widens():
    svg = charts.ladder_svg(_many(25))
    assert svg is not None
    for i in range(25):
        assert len(re.findall(rf"recipe_{i:02d}\b", svg)) == 1
    few = charts.ladder_svg(G)
    width = [float(re.search(r'<svg[^>]* width="([\d.]+)pt"', s).group(1)) for s in (svg, few)]
    # 4 recipes + the null + 25: 30 lines, 3 columns beside the axes, each 1.6 inches (115.2 pt) wider
    assert width[0] - width[1] == 3 * 115.2

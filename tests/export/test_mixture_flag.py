"""``curate export RUN --mixture search|SRC=W,SRC=W``: the flag's parsing, its errors (malformed on the
command line, invalid weights by the ``export:`` section's own check), and an export at its weights."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from curate.core.errors import PhaseError
from curate.export import cli
from tests.export.export_fixtures import make_run


def _texts(n: int) -> list[str]:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
    rng = np.random.default_rng(0)
    return [" ".join(rng.choice(words, int(rng.integers(5, 30)))) + "." for _ in range(n)]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="curate")
    cli.register(p.add_subparsers(dest="command", required=True))
    return p


def test_the_flag_parses_search_or_weights_per_source():
    assert parser().parse_args(["export", "r", "--mixture", "search"]).mixture == "search"
    assert parser().parse_args(["export", "r", "--mixture", "web=0.7, books=0.3"]).mixture == {
        "web": 0.7,
        "books": 0.3,
    }
    assert parser().parse_args(["export", "r", "--mixture", "a=b=2"]).mixture == {"a=b": 2.0}  # the last =
    assert parser().parse_args(["export", "r"]).mixture is None  # not given: the run's export: section


USAGE = "expected `search` or SRC=W,SRC=W (e.g. web=0.7,books=0.3), "


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("web", USAGE + "got 'web' in 'web'"),
        ("web=0.7,books", USAGE + "got 'books' in 'web=0.7,books'"),
        ("web=lots", USAGE + "got 'web=lots' in 'web=lots'"),
        ("=0.5", USAGE + "got '=0.5' in '=0.5'"),
        ("web=inf", USAGE + "got 'web=inf' in 'web=inf'"),
        ("web=0.5,web=0.5", "source 'web' is given twice in 'web=0.5,web=0.5'"),
    ],
)
def test_a_malformed_value_is_a_usage_error_naming_it(value, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["export", "r", "--mixture", value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "curate export: error: argument --mixture: " + message in err


def test_invalid_weights_are_refused_by_the_sections_own_check(tmp_path, capsys):
    from curate.cli import main

    run = make_run(tmp_path / "run", _texts(20))
    for value in ("books=-1,web=2", "books=0,web=0"):
        with pytest.raises(PhaseError, match=r"export\.mixture: expected `search` or a mapping"):
            cli.build_context(parser().parse_args(["export", str(run), "--mixture", value]))
    assert main(["export", str(run), "--mixture", "books=0,web=0"]) == 2
    assert capsys.readouterr().err.startswith(
        "curate export: error: export.mixture: expected `search` or a mapping of source to weight "
        "(>= 0, not all 0), got {'books': 0.0, 'web': 0.0}"
    )
    assert not (run / "export").exists()


def test_an_export_at_the_flags_weights_then_at_the_search_choice(tmp_path, capsys):
    run = make_run(tmp_path / "run", _texts(600))  # sources alternate: books, web
    args = parser().parse_args(["export", str(run), "--mixture", "books=1,web=3"])
    assert args.func(args) == 0
    manifest = json.loads((run / "export" / "manifest.json").read_text())
    assert manifest["request"]["mixture_weights"] == {"books": 0.25, "web": 0.75}  # normalized
    assert manifest["mixture"]["unit"] == "bytes"  # no tokenizer: the text export's unit
    confirmed = {"export": True, "sentence": "The chosen mixture trains better than the natural mixture."}
    mix = {"chosen": {"weights": {"books": 0.6, "web": 0.4}}, "decision": confirmed}
    (run / "mix.json").write_text(json.dumps(mix))
    args = parser().parse_args(["export", str(run), "--mixture", "search", "--overwrite"])
    assert args.func(args) == 0
    manifest = json.loads((run / "export" / "manifest.json").read_text())
    assert manifest["request"]["mixture_weights"] == {"books": 0.6, "web": 0.4}
    files = sorted((run / "export" / "parquet").glob("train-*.parquet"))
    rows = [r for f in files for r in pq.read_table(f).to_pylist()]
    got = {s: sum(len(r["text"].encode()) for r in rows if r["source"] == s) for s in ("books", "web")}
    assert abs(got["books"] / sum(got.values()) - 0.6) <= 0.01


NOT_BETTER = (
    "The search cannot beat the natural mixture: the chosen mixture was not called better than it on 5 "
    "fresh seeds (multiplier 1.09x [0.59, >2.00], paired p = 0.26); keep the natural mixture."
)


def test_search_weights_are_refused_unless_the_confirmation_called_them_better(tmp_path, capsys):
    from curate.cli import main

    run = make_run(tmp_path / "run", _texts(200))
    mix = {
        "chosen": {"weights": {"books": 0.6, "web": 0.4}},
        "decision": {"export": False, "sentence": NOT_BETTER},
    }
    (run / "mix.json").write_text(json.dumps(mix))
    assert main(["export", str(run), "--mixture", "search"]) == 2
    assert capsys.readouterr().err == (
        f"curate export: error: export.mixture: search: {run / 'mix.json'}'s confirmation did not call the "
        f"chosen mixture better than the natural mixture, so it is not exported. {NOT_BETTER} To export the "
        "chosen weights anyway, set export.mixture_unconfirmed: true (or `curate export "
        f"{run} --mixture search --unconfirmed-mixture`); without export.mixture the export keeps the "
        "natural mixture\n"
    )
    assert not (run / "export").exists()
    # a mix.json from before the decision block: its confirmation's own call decides
    old = {
        "chosen": {"weights": {"books": 0.6, "web": 0.4}},
        "confirmation": {"chosen": {"call": "not_called"}},
    }
    (run / "mix.json").write_text(json.dumps(old))
    with pytest.raises(
        PhaseError, match=r"The confirmation called the chosen mixture not called\. To export"
    ):
        cli.handler(parser().parse_args(["export", str(run), "--mixture", "search"]))
    (run / "mix.json").write_text(json.dumps({"chosen": {"weights": {"books": 0.6, "web": 0.4}}}))
    with pytest.raises(
        PhaseError, match=r"mix\.json has no confirmation of the chosen mixture on fresh seeds"
    ):
        cli.handler(parser().parse_args(["export", str(run), "--mixture", "search"]))
    assert not (run / "export").exists()


def test_the_override_exports_unconfirmed_weights_and_the_manifest_says_so(tmp_path):
    run = make_run(tmp_path / "run", _texts(600))
    mix = {
        "chosen": {"weights": {"books": 0.6, "web": 0.4}},
        "decision": {"export": False, "sentence": NOT_BETTER},
    }
    (run / "mix.json").write_text(json.dumps(mix))
    args = parser().parse_args(["export", str(run), "--mixture", "search", "--unconfirmed-mixture"])
    assert args.func(args) == 0
    manifest = json.loads((run / "export" / "manifest.json").read_text())
    assert manifest["request"]["options"]["mixture_unconfirmed"] is True
    assert manifest["request"]["mixture_weights"] == {"books": 0.6, "web": 0.4}
    assert manifest["mixture"]["search"] == {
        "called_better": False,
        "exported_unconfirmed": True,
        "sentence": NOT_BETTER,
    }
    assert parser().parse_args(["export", str(run)]).unconfirmed_mixture is None  # not given: the section's

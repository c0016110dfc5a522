"""The report's label table: each control's words by its name, and a control kind it has no row for shown
by its name and by the fields its block carries."""

from __future__ import annotations

from curate.goodput.schema import ControlBlock
from curate.report.fmt import ladder_warning, row_label, what


def test_the_planted_control_is_described_as_it_was_built() -> None:
    matched = {"fraction": 0.2, "matched": {"of": "curated", "shares_with_baseline": 0.57}}
    assert what("planted", matched) == "the null's subsample with 20% of its documents word-shuffled"
    assert what("planted", {"fraction": 0.4}) == "40% of raw word-shuffled"  # a file from before matching
    letters = {**matched, "corruption": "letters"}
    assert (
        what("planted", letters)
        == "the null's subsample with 20% of its documents letter-shuffled within words"
    )


def test_a_control_without_a_row_is_shown_by_its_name() -> None:
    block = ControlBlock.from_json({"message": "m", "called_worse": True}, strict=False, path="shuffled")
    assert what("shuffled", block) == "shuffled"
    assert row_label("shuffled", block) == "shuffled"
    assert row_label("null", block) == "null (random raw subsample)"


def test_ladder_warnings_by_the_key_a_kind_writes() -> None:
    assert ladder_warning("planted_not_called_at", ["a@1", "b@2"]) == (
        "Warning: the planted control is not called worse at a@1, b@2: that point could not see a known "
        "effect; rankings there are doubtful."
    )
    assert ladder_warning("shuffled_separated_at", ["a@1"]) == "Warning: shuffled separated at a@1."

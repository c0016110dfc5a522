"""The command line: verbs discovered from subpackages, help with examples, embedded-runtime isolation."""

from __future__ import annotations

import pytest

from curate.cli import _wants_embedded_ray, build_parser


def test_every_verb_is_registered_with_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    verbs = set(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert {"run", "inspect", "report", "export", "proxy", "train-classifier"} <= verbs
    for verb in ("run", "inspect"):
        with pytest.raises(SystemExit):
            parser.parse_args([verb, "--help"])
        assert "example:" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["run", "p.yaml"], {}, True),
        (["run", "p.yaml", "--engine", "ray"], {}, True),
        (["run", "p.yaml", "--engine", "inline"], {}, False),
        (["run", "p.yaml", "--engine=inline"], {}, False),
        (["run", "p.yaml", "--address", "10.0.0.1:6379"], {}, False),
        (["run", "p.yaml"], {"RAY_ADDRESS": "10.0.0.1:6379"}, False),
        (["inspect", "runs/x"], {}, False),
        ([], {}, False),
    ],
)
def test_only_an_embedded_run_enters_the_private_network(argv, env, expected, monkeypatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert _wants_embedded_ray(argv) is expected

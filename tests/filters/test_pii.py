"""pii_v1: each type's exact redaction, the look-alikes it leaves alone, reject mode, placeholders,
per-type count columns, and its name in a pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curate.core import schema
from curate.core.registry import STAGES
from curate.filters.pii import TYPES, Pii, PiiParams, iban_ok, luhn_ok
from curate.pipeline.config import build_stages, parse_pipeline
from tests.helpers import make_table


def redact(texts: list[str], **params: object) -> list[str]:
    return Pii(PiiParams(**params)).process(make_table(texts)).column(schema.TEXT).to_pylist()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Write to jane.doe+news@example.co.uk today.", "Write to <EMAIL> today."),
        ("Call +1 415-555-2671 now", "Call <PHONE> now"),
        ("or (212) 736-5000, or +44 20 7946 0018.", "or <PHONE>, or <PHONE>."),
        ("E.164: +14155552671", "E.164: <PHONE>"),
        ("UK mobile 07400 123456.", "UK mobile <PHONE>."),
        ("ends 2390:a901:cdec:85da:200f:7753:f217:faac.", "ends <IP_ADDRESS>."),
        ("office 415-555-2671 24 hours a day", "office <PHONE> 24 hours a day"),
        (
            "host 93.184.216.34, v6 2606:2800:220:1:248:1893:25c8:1946 and 2a00:1450::200e",
            "host <IP_ADDRESS>, v6 <IP_ADDRESS> and <IP_ADDRESS>",
        ),
        ("DNS server 8.8.8.8.", "DNS server <IP_ADDRESS>."),
        ("card 4111 1111 1111 1111; amex 3782-822463-10005", "card <CREDIT_CARD>; amex <CREDIT_CARD>"),
        ("pay GB82 WEST 1234 5698 7654 32 or DE89370400440532013000", "pay <IBAN> or <IBAN>"),
        ("SSN 123-45-6789.", "SSN <SSN>."),
        ("id AKIAIOSFODNN7EXAMPLE", "id <SECRET>"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "<SECRET>"),
        ("t ghp_" + "a1B2" * 9 + " x", "t <SECRET> x"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy\n-----END RSA PRIVATE KEY-----\nok",
            "<SECRET>\nok",
        ),
    ],
)
def test_each_type_is_redacted(text: str, expected: str) -> None:
    assert redact([text]) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "4111 1111 1111 1112 fails Luhn",  # one digit off a test card
        "GB82 WEST 1234 5698 7654 33 fails mod-97",
        "000-12-3456 and 666-12-3456 were never issued",
        "slices a[1::2], times 12:30:45, C++ std::vector",
        "[GCC 2.7.2.2], novas-3.1.1.3, section 8.6.4.1., '1.0.0.127.in-addr.arpa'",
        "private 192.168.0.1, loopback 127.0.0.1, documentation 203.0.113.7 and 2001:db8::1",
        "1 2 3 4 5 6 7 8 9 10; dates 2019-07-15 and 12.05.2019; 1,234,567 people",
        "ISBN 978-3-16-148410-0, OID 1.3.6.1.4.1.311, pi 3.14159265358979",
        "a count 1234567890 and a timestamp 1563456789",
        "user@localhost and @decorator",
        "Amex-like 3410-135918-12345 and 3737 203675 12345 fail Luhn; ref ES27 2477 4584 6413 8734 7690",
        "private 172.25.24.201 is not a phone either; version 20.13.12.0 from the release",
        "ports 32768-65535, ratio 229291.1234, mapped ::ffff:192.168.0.1, IBAN GB68 PTEM 2228 1459 5110 10",
    ],
)
def test_look_alikes_are_left_alone(text: str) -> None:
    assert redact([text]) == [text]


def test_validators() -> None:
    assert luhn_ok("4111111111111111")
    assert not luhn_ok("4111111111111112")
    assert iban_ok("GB82WEST12345698765432")
    assert not iban_ok("GB82WEST12345698765433")
    assert not iban_ok("GB82WEST1234569876543")  # GB IBANs have 22 characters


def test_counts_per_type_and_placeholders() -> None:
    text = "a@b.io c@d.org 93.184.216.34"
    stage = Pii(PiiParams(placeholders={"email": "[email]"}))
    out = stage.process(make_table([text, "nothing here"]))
    assert out.column(schema.TEXT).to_pylist() == ["[email] [email] <IP_ADDRESS>", "nothing here"]
    assert out.column("pii_v1.email").to_pylist() == [2, 0]
    assert out.column("pii_v1.ip").to_pylist() == [1, 0]
    assert stage.output_fields() == list(TYPES)
    assert [c for c in out.column_names if c.startswith("pii_v1.")] == [f"pii_v1.{t}" for t in TYPES]


def test_ip_scope_all_takes_every_address() -> None:
    text = "private 192.168.0.1, documentation 2001:db8::1"
    assert redact([text], ip_scope="all") == ["private <IP_ADDRESS>, documentation <IP_ADDRESS>"]


def test_only_the_types_asked_for() -> None:
    stage = Pii(PiiParams(types=["ip"]))
    out = stage.process(make_table(["a@b.io 93.184.216.34"]))
    assert out.column(schema.TEXT).to_pylist() == ["a@b.io <IP_ADDRESS>"]
    assert [c for c in out.column_names if c.startswith("pii_v1.")] == ["pii_v1.ip"]


def test_reject_mode_keeps_text_and_names_the_first_type() -> None:
    texts = ["mail a@b.io, ssn 123-45-6789", "clean", "call +1 415-555-2671"]
    out = Pii(PiiParams(mode="reject")).process(make_table(texts))
    assert out.column(schema.TEXT).to_pylist() == texts
    assert out.column(schema.REJECT).to_pylist() == ["pii_v1:email", None, "pii_v1:phone"]
    assert out.column("pii_v1.ssn").to_pylist() == [1, 0, 0]


def test_bad_params_fail_at_validate() -> None:
    for params, msg in (
        (PiiParams(mode="drop"), "mode"),
        (PiiParams(types=["passport"]), "unknown types"),
        (PiiParams(placeholders={"mail": "x"}), "unknown placeholders"),
        (PiiParams(phone_regions=["XX"]), "phone_regions"),
        (PiiParams(ip_scope="some"), "ip_scope"),
    ):
        with pytest.raises(ValueError, match=msg):
            Pii(params).validate()


def test_pickles_without_its_checks() -> None:
    import pickle

    stage = Pii()
    stage.process(make_table(["a@b.io"]))
    again = pickle.loads(pickle.dumps(stage))
    assert "_checks" not in again.__dict__
    assert again.process(make_table(["a@b.io"])).column(schema.TEXT).to_pylist() == ["<EMAIL>"]


def test_pipeline_finds_it_by_name() -> None:
    assert STAGES.get("pii_v1") is Pii
    cfg = parse_pipeline(
        "name: t\ninput: {path: x.jsonl, format: jsonl}\nstages:\n"
        "  - transform: pii_v1\n    params: {mode: reject, types: [email, phone]}\n"
    )
    (stage,) = build_stages(cfg)
    assert isinstance(stage, Pii)
    assert stage.params.types == ["email", "phone"]


def test_totals_reach_the_manifest_funnel(tmp_path: Path) -> None:
    """A whole run (inline engine): per-type totals in the funnel row, rejected rows counted too."""
    from curate.api import run

    lines = [{"id": f"d{i}", "text": f"doc {i} mail u{i}@example.org"} for i in range(5)]
    lines += [{"id": "x", "text": "ssn 123-45-6789 and ip 93.184.216.34"}, {"id": "y", "text": "clean"}]
    (tmp_path / "in.jsonl").write_text("\n".join(json.dumps(d) for d in lines) + "\n")
    (tmp_path / "p.yaml").write_text(
        f"name: t\ninput: {{path: {tmp_path}/in.jsonl, format: jsonl, batch_docs: 4}}\n"
        "stages:\n  - transform: pii_v1\n    params: {mode: reject, types: [ssn, email, ip]}\n"
    )
    manifest = run(str(tmp_path / "p.yaml"), output=str(tmp_path / "out"), engine="inline", phases=False)
    (row,) = [s for s in manifest["stages"] if s["name"] == "pii_v1"]
    assert row["counts"] == {"ssn": 1, "email": 5, "ip": 1}
    assert row["removed"] == {"pii_v1:email": 5, "pii_v1:ssn": 1}
    assert manifest["accounting"]["kept"] == 1
    from curate.report.markdown import _funnel

    assert "counted: email 5, ip 1, ssn 1" in "\n".join(_funnel(manifest))


def test_spans_lists_what_process_replaces() -> None:
    text = "mail a@b.io or call +1 415-555-2671, card 4111 1111 1111 1111"
    assert Pii().spans(text) == [
        ("email", "a@b.io"),
        ("card", "4111 1111 1111 1111"),
        ("phone", "+1 415-555-2671"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "+31 6 12341545, +33 6 12 34 16 38, +81 3-1234-7025 and +61 2 1234 4436",
    ],
)
def test_international_numbers_with_short_groups(text: str) -> None:
    assert redact([text]) == ["<PHONE>, <PHONE>, <PHONE> and <PHONE>"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ping 8.8.8.8 to test", "ping <IP_ADDRESS> to test"),  # a public resolver needs no cue
        ("use 8.8.8.8 or 1.1.1.1 as resolvers", "use <IP_ADDRESS> or <IP_ADDRESS> as resolvers"),
        ("set it to 8.8.8.8.", "set it to <IP_ADDRESS>."),
        ("the request came from 93.184.216.34. Then", "the request came from <IP_ADDRESS>. Then"),
        ("listening on 23.45.67.89:8080 now", "listening on <IP_ADDRESS>:8080 now"),  # a port after
        ("blocked 52.4.7.21 yesterday", "blocked <IP_ADDRESS> yesterday"),
        ("came from 12.45.67.189 today", "came from <IP_ADDRESS> today"),  # a number over 99
        ("host 23.45.67.89 ok", "host <IP_ADDRESS> ok"),
        ("IPs 5.6.7.8 and 9.10.11.12 ok", "IPs <IP_ADDRESS> and <IP_ADDRESS> ok"),  # small, with a cue
    ],
)
def test_public_addresses_in_running_text(text: str, expected: str) -> None:
    assert redact([text]) == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "6.1.8.32. Handling of faults\n",  # a numbered heading
        "  9.5.1.6. Errata\n",
        "4.8.3.5 Recap\n",
        "see 9.5.1.6. for details",  # a reference
        "as in 6.1.8.32. The next",  # numbers under 100 before a final dot
        "Section 6.1.8.32 says, and \u00a7 12.4.33.51 holds",
        "erratum 2.1.4.70 applies; release 21.3.45.67; pkg v1.2.3.4 out",
        "ranges 33.1.2.3-4 and 1.2.3.4 alone",
        "Refer to 6.1.8.32 in the TRM; sections 3.1.2.1, 3.1.12.33 and 12.4.50.61 describe it",
        "Linux 5.10.110.1 kernel",
        # an address of a numbering's shape (first number under 32, all under 100) needs a cue too
        "came from 23.45.67.89 today",
    ],
)
def test_section_errata_and_version_numbers_are_not_addresses(text: str) -> None:
    assert redact([text]) == [text]


def test_the_readme_states_the_defaults_and_how_to_add_a_region() -> None:
    readme = (Path(__file__).parents[2] / "docs" / "own-data.md").read_text()
    p = PiiParams()
    assert f"by default `[{', '.join(p.phone_regions)}]`" in readme
    assert p.ip_scope == "public"
    assert "IPs: public addresses by default" in readme
    assert "**Not covered:** names, street\naddresses" in readme
    assert redact(["Ruf an: 030 1234567 bitte"]) == ["Ruf an: 030 1234567 bitte"]
    assert redact(["Ruf an: 030 1234567 bitte"], phone_regions=["US", "GB", "DE"]) == [
        "Ruf an: <PHONE> bitte"
    ]

"""pii_v1's exact outputs on a PII-dense set, and its fast paths against the plain ones they replace.

The set is ``benchmarks/pii_labelled.py``'s planting (every kind of value and decoy) in 400 synthetic
documents, so it needs no corpus. The sha256 of the redacted texts was recorded with the code before
its speed work (commit d1363b2: validators without caches, the e-mail and IPv6 patterns
scanned over the whole document); the speed work must leave it unchanged.
"""

from __future__ import annotations

import collections
import hashlib
import re

import pyarrow as pa
import pytest

from benchmarks.pii_labelled import build
from curate.core import schema
from curate.filters import _pii_checks as pc
from curate.filters import _pii_patterns as pp
from curate.filters.pii import TYPES, Pii, PiiParams

FILLER = (
    "The committee met on Tuesday. It reviewed the plan in detail. Members asked questions about "
    "costs. The chair thanked everyone. "
)
N_EMAIL_MATCHES, N_V6_MATCHES = 111, 25  # the plain patterns, counted on the set
# Look-alikes the planted set lacks: local and documentation addresses, slices, small dotted numbers.
LOOKALIKES = [
    "loopback ::1, link fe80::1:2:3, docs 2001:db8::8a2e:370:7334, slice a[1::2], ab:cd:ef",
    "private 10.0.0.1, 192.168.1.20, docs 192.0.2.7; small 1.2.3.4, host 1.2.3.4, version 2.7.2.2",
    "call 555-2671 or 212-736-5000 x, range 32768-65535, date 2010-09-06 22, +1 415-555-2671",
]
BEFORE_SPEED_WORK = "1d9ce123433dfdc1ef5ce44ef433e99954274993e99204c83e3d379a41255bbc"


@pytest.fixture(scope="module")
def planted():
    return build([(f"d{i}", FILLER * (1 + i % 3)) for i in range(400)], seed=7)


def _table(docs) -> pa.Table:
    return pa.table({"id": [d.id for d in docs], "text": [d.text for d in docs], "source": ["s"] * len(docs)})


def test_redacted_texts_are_those_before_the_speed_work(planted) -> None:
    out = Pii(PiiParams()).process(_table(planted))
    texts = out.column("text").to_pylist()
    assert hashlib.sha256("\x00".join(texts).encode()).hexdigest() == BEFORE_SPEED_WORK
    # every planted value found once, nothing else (the filler holds no PII, the decoys are not PII)
    want = collections.Counter(t for d in planted for t, _ in d.planted)
    assert want == {"email": 111, "ssn": 90, "ip": 85, "phone": 82, "card": 81, "secret": 80, "iban": 75}
    assert {t: sum(out.column(f"pii_v1.{t}").to_pylist()) for t in TYPES} == dict(want)
    assert sum(len(d.decoys) for d in planted) == 414


def test_reject_mode_names_the_first_type_in_check_order(planted) -> None:
    out = Pii(PiiParams(mode="reject")).process(_table(planted))
    reasons = out.column(schema.REJECT).to_pylist()
    for d, reason in zip(planted, reasons, strict=True):
        kinds = {t for t, _ in d.planted}
        first = next((t for t in TYPES if t in kinds), None)
        assert reason == (f"pii_v1:{first}" if first else None)
    assert out.column("text").to_pylist() == [d.text for d in planted]  # reject mode never edits


def _plain(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


def _fast(scanner: pp.Scanner, text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []

    def keep(m: re.Match[str]) -> str:
        spans.append(m.span())
        return m.group()

    assert scanner.sub(keep, text) == text
    return spans


@pytest.mark.parametrize(
    "text",
    [
        "a@b.co",
        "x a@b.co and c.d@e-f.org, then @@ and @x.io and name@ and " + "w" * 70 + "@long.com end",
        "jane.doe+news@example.co.uk;bob@x.io@y.io s@t.uk.",
        "..a@b.cc a-b@c.dd _a@b.cc %a@b.cc",
        "",
        "no anchor at all",
    ],
)
def test_the_email_scanner_finds_what_the_pattern_finds(text: str) -> None:
    scanner = pp._Anchored(pp._EMAIL, "@", 64)
    assert _fast(scanner, text) == _plain(pp._EMAIL, text)


def test_the_anchored_and_hinted_scanners_on_the_planted_set(planted) -> None:
    email = pp._Anchored(pp._EMAIL, "@", 64)
    v6 = pp._Hinted(pp._IPV6, pp._IPV6_HINT)
    n_email = n_v6 = 0
    for d in planted:
        assert _fast(email, d.text) == _plain(pp._EMAIL, d.text)
        assert _fast(v6, d.text) == _plain(pp._IPV6, d.text)
        n_email += len(_plain(pp._EMAIL, d.text))
        n_v6 += len(_plain(pp._IPV6, d.text))
    assert (n_email, n_v6) == (N_EMAIL_MATCHES, N_V6_MATCHES)


@pytest.mark.parametrize(
    ("pattern", "make"),
    [
        (pp._PHONE, lambda: pc.PhoneCheck(["US", "GB"])),
        (pp._IPV4, lambda: pc.IpCheck(v6=False, public_only=True)),
        (pp._IPV6, lambda: pc.IpCheck(v6=True, public_only=True)),
        (pp._IPV4, lambda: pc.IpCheck(v6=False, public_only=False)),
    ],
)
def test_a_cached_verdict_is_the_uncached_one(planted, pattern, make) -> None:
    cached = make()
    texts = [d.text for d in planted] + LOOKALIKES
    candidates = [m for t in texts for m in pattern.finditer(t)]
    verdicts = [cached(m) for m in candidates]
    assert [cached(m) for m in candidates] == verdicts  # now all from the cache
    assert [make()(m) for m in candidates] == verdicts  # a fresh validator for each: no cache
    assert len(candidates) >= 30
    assert 0 < sum(map(bool, verdicts)) < len(candidates)  # both verdicts occur


def test_the_ipv4_table_is_ipaddress_is_global() -> None:
    import ipaddress
    import random

    rng = random.Random(0)
    values = [c + d for c in pc._V4_STARTS for d in (-1, 0, 1) if 0 <= c + d < 1 << 32]
    values += [rng.getrandbits(32) for _ in range(20_000)]
    texts = [str(ipaddress.IPv4Address(v)) for v in values]
    texts += ["01.2.3.4", "1.2.3.04", "256.1.1.1", "1.2.3.999", "100.64.0.1", "100.128.0.0"]

    def plain(s: str) -> bool | None:
        try:
            return ipaddress.ip_address(s).is_global
        except ValueError:
            return None

    assert [pc.v4_is_global(s) for s in texts] == [plain(s) for s in texts]
    assert pc.v4_is_global("8.8.8.8") is True
    assert pc.v4_is_global("192.168.1.1") is False
    assert pc.v4_is_global("01.2.3.4") is None


def test_phone_verdicts_are_plain_phonenumbers_verdicts(planted) -> None:
    """``_PhoneCheck._check`` (with its length shortcut) against the check as it was: parse, then
    ``is_valid_number``, per region."""
    import phonenumbers as pn

    def plain(s: str) -> bool:
        if not 7 <= sum(ch.isdigit() for ch in s) <= 15 or re.fullmatch(r"\d{1,3}(?:\.\d{1,3}){3}", s):
            return False
        if not s.startswith("+") and not pc.national_shape(s):
            return False
        for region in [None] if s.startswith("+") else ["US", "GB"]:
            try:
                if pn.is_valid_number(pn.parse(s, region)):
                    return True
            except pn.NumberParseException:
                continue
        return False

    texts = [d.text for d in planted] + LOOKALIKES
    strings = sorted({m.group() for t in texts for m in pp._PHONE.finditer(t)})
    strings += ["+1 800 555 0199 12", "020 7946 0018", "(020) 7946 0018", "+44 1234 56", "1 212 736 5000"]
    check = pc.PhoneCheck(["US", "GB"])
    verdicts = [check._check(s) for s in strings]
    assert verdicts == [plain(s) for s in strings]
    assert 80 <= sum(verdicts) < len(strings)

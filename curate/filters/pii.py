"""``pii_v1``: personal data and secrets redacted with typed placeholders, or the document rejected.

Types, checked in this order on each document (a span replaced by one type is not seen by the next):

=========== ============================================================ =================
type        what is matched                                              placeholder
=========== ============================================================ =================
secret      private-key blocks, AWS / GitHub / Slack / Google / Stripe /  ``<SECRET>``
            OpenAI keys, JWTs, ``aws_secret_access_key = ...``
email       ``local@domain.tld``                                          ``<EMAIL>``
iban        country code, check digits, BBAN; the country's length and    ``<IBAN>``
            the ISO 7064 mod-97 checksum
card        13-19 digits (spaces or dashes between groups), a card        ``<CREDIT_CARD>``
            network's prefix and the Luhn checksum
ssn         US social-security numbers ``AAA-GG-SSSS``, without the       ``<SSN>``
            never-issued areas 000, 666, 9xx, group 00, serial 0000
ip          IPv4 (four octets 0-255, not part of a longer dotted number)  ``<IP_ADDRESS>``
            and IPv6 (``ipaddress`` validates; needs 3 groups or a group
            of 3+ hex digits, so slices like ``a[1::2]`` are not taken);
            global addresses only unless ``ip_scope: all``
phone       ``+`` international numbers, or national numbers of           ``<PHONE>``
            ``phone_regions`` written as people write them (one kind of
            separator, first and last group of 3+ digits); valid per
            the ``phonenumbers`` library's metadata
=========== ============================================================ =================

Columns (``pii_v1.<type>``): how many spans of each type the document had (int32), for every type
in ``types``. ``mode: redact`` (default) replaces each span by its placeholder; ``mode: reject``
leaves the text alone and rejects a document with any span as ``pii_v1:<type>`` (the first type in the
order above). Vectorized where it counts: one RE2 pass per type over the whole batch
(``pyarrow.compute.match_substring_regex``) picks the documents that can hold a span; only those go
through Python's ``re`` and the validators.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate import schema
from curate.registry import STAGES
from curate.stage import Transform, with_rejections

TYPES = ("secret", "email", "iban", "card", "ssn", "ip", "phone")
PLACEHOLDERS = {
    "secret": "<SECRET>",
    "email": "<EMAIL>",
    "iban": "<IBAN>",
    "card": "<CREDIT_CARD>",
    "ssn": "<SSN>",
    "ip": "<IP_ADDRESS>",
    "phone": "<PHONE>",
}
MODES = ("redact", "reject")

# --- patterns. Each type has a cheap RE2 prefilter (pyarrow, whole batch) and an exact Python pattern
# (lookarounds RE2 lacks) whose matches a validator may still refuse.
_SECRET = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\s*(?:[A-Za-z-]+: [^\n]*\s+)*[A-Za-z0-9+/=\s]{16,}?"
    r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----"
    r"|\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"
    r"|\bgh[pousr]_[A-Za-z0-9]{36,255}\b|\bgithub_pat_[A-Za-z0-9_]{60,255}\b"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"
    r"|\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"
    r"|\b[sr]k_(?:live|test)_[0-9A-Za-z]{20,}\b"
    r"|\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}"
    r"|\bsk-(?:proj|svcacct)-[A-Za-z0-9_-]{40,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r"|(?i:aws_secret_access_key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"
)
_SECRET_PRE = (
    r"PRIVATE KEY-----|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36}|github_pat_"
    r"|xox[abposr]-|AIza[0-9A-Za-z_-]{35}|[sr]k_(?:live|test)_|sk-[A-Za-z0-9_-]{20}|eyJ[A-Za-z0-9_-]{8,}\.eyJ"
    r"|(?i:aws_secret_access_key)"
)
_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,63})@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"[A-Za-z]{2,24}(?![\w-])"
)
_EMAIL_PRE = r"[A-Za-z0-9]@[A-Za-z0-9.-]+\.[A-Za-z]{2}"
_IBAN = re.compile(r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![\w])")
_IBAN_PRE = r"\b[A-Z]{2}\d{2} ?[A-Z0-9]{4}"
_CARD = re.compile(  # groups of four (13-19 digits), or Amex / Diners' 4-6-5 / 4-6-4
    r"(?<![\w.,-])(?:(?:\d{4}[ -]?){2,3}\d{3,4}(?:[ -]?\d{1,3})?|\d{4}[ -]?\d{6}[ -]?\d{4,5})(?![\w]|[.,-]\d)"
)
_CARD_PRE = r"\d{4}[ -]?\d{4}[ -]?\d{2}|\d{4}[ -]?\d{6}[ -]?\d{4}"
_SSN = re.compile(r"(?<![\w-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w]|-\d)")
_SSN_PRE = r"\d{3}-\d{2}-\d{4}"
_IPV4 = re.compile(
    r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?!\w|\.\w)"
)
# Four small numbers are a version or a section ("GCC 2.7.2.2", "8.6.4.1.") unless an IP cue precedes.
_IP_CUE = re.compile(r"(?i)\b(?:ip|ipv4|address|addr|host|server|dns|gateway|from|by)\b|://")
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?![\w:])"
)
_IP_PRE = r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}"
_PHONE = re.compile(
    r"(?<![\w+.,/-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,5}\)[ .-]?)?\d{2,12}(?:[ .-]\d{2,8}){0,4}(?![\w/-]|[.,]\d)"
)
_PHONE_PRE = r"\+\d{1,3}[ .-]?\(?\d|\(\d{1,5}\)[ .-]?\d|\d{2,5}[ .-]\d{2,5}[ .-]?\d{2}"

# ISO 13616 IBAN lengths by country (the countries SWIFT's registry lists).
_IBAN_LENGTH = dict(
    (c, int(n))
    for c, n in (
        kv.split(":")
        for kv in [
            "AD:24",
            "AE:23",
            "AL:28",
            "AT:20",
            "AZ:28",
            "BA:20",
            "BE:16",
            "BG:22",
            "BH:22",
            "BI:27",
            "BR:29",
            "BY:28",
            "CH:21",
            "CR:22",
            "CY:28",
            "CZ:24",
            "DE:22",
            "DJ:27",
            "DK:18",
            "DO:28",
            "EE:20",
            "EG:29",
            "ES:24",
            "FI:18",
            "FK:18",
            "FO:18",
            "FR:27",
            "GB:22",
            "GE:22",
            "GI:23",
            "GL:18",
            "GR:27",
            "GT:28",
            "HR:21",
            "HU:28",
            "IE:22",
            "IL:23",
            "IQ:23",
            "IS:26",
            "IT:27",
            "JO:30",
            "KW:30",
            "KZ:20",
            "LB:28",
            "LC:32",
            "LI:21",
            "LT:20",
            "LU:20",
            "LV:21",
            "LY:25",
            "MC:27",
            "MD:24",
            "ME:22",
            "MK:19",
            "MN:20",
            "MR:27",
            "MT:31",
            "MU:30",
            "NI:28",
            "NL:18",
            "NO:15",
            "OM:23",
            "PK:24",
            "PL:28",
            "PS:29",
            "PT:25",
            "QA:29",
            "RO:24",
            "RU:33",
            "SA:24",
            "SC:31",
            "SD:18",
            "SE:24",
            "SI:19",
            "SK:24",
            "SM:27",
            "SO:23",
            "ST:25",
            "SV:28",
            "TL:23",
            "TN:24",
            "TR:26",
            "UA:29",
            "VA:22",
            "VG:24",
            "XK:20",
            "YE:30",
        ]
    )
)
# Card networks' IIN prefixes (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro).
_CARD_PREFIX = re.compile(
    r"4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|6(?:011|5|4[4-9]|2)|35|3(?:0[0-5]|[689])|5[06-8]"
)


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum of a digit string."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(candidate: str) -> bool:
    """The country's IBAN length and the ISO 7064 mod-97-10 checksum."""
    s = candidate.replace(" ", "")
    if _IBAN_LENGTH.get(s[:2]) != len(s):
        return False
    moved = s[4:] + s[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


def _card_ok(m: re.Match[str]) -> int:
    digits = re.sub(r"[ -]", "", m.group())
    ok = 13 <= len(digits) <= 19 and bool(_CARD_PREFIX.match(digits)) and luhn_ok(digits)
    return len(m.group()) if ok else 0


def _iban_ok(m: re.Match[str]) -> int:
    return len(m.group()) if iban_ok(m.group()) else 0


class _IpCheck:
    """IPv6 candidates must parse (``ipaddress``); with ``public_only`` an address must also be global,
    so loopback, private, link-local and documentation ranges (``192.0.2.0/24``, ``2001:db8::/32``),
    which identify no one, are left alone."""

    def __init__(self, *, v6: bool, public_only: bool) -> None:
        self.v6 = v6
        self.public_only = public_only

    def __call__(self, m: re.Match[str]) -> int:
        s = m.group()
        if self.v6:
            groups = [g for g in s.split(":") if g]
            if len(groups) < 3 and not any(len(g) >= 3 for g in groups):
                return 0  # "1::2" is a slice far more often than an address
        try:
            addr = ipaddress.ip_address(s)
        except ValueError:
            return 0
        small = not self.v6 and all(int(o) < 32 for o in s.split("."))
        if small and not _IP_CUE.search(m.string, max(0, m.start() - 30), m.start()):
            return 0
        return len(s) if addr.is_global or not self.public_only else 0


class _PhoneCheck:
    """Validates phone candidates with ``phonenumbers`` (imported once per worker, in ``setup``)."""

    def __init__(self, regions: list[str]) -> None:
        import phonenumbers

        self.pn = phonenumbers
        self.regions = regions

    def __call__(self, m: re.Match[str]) -> int:
        """The length of the longest valid number that starts the match (0: none); trailing groups of
        digits are dropped one at a time, since "415-555-2671 24 hours" runs on past the number."""
        s = m.group()
        while True:
            if self._valid(s):
                return len(s)
            cut = max(s.rfind(" "), s.rfind("-"), s.rfind("."))
            if cut <= 0:
                return 0
            s = s[:cut]

    def _valid(self, s: str) -> bool:
        n_digits = sum(ch.isdigit() for ch in s)
        if not 7 <= n_digits <= 15:
            return False
        international = s.startswith("+")
        if not international and not _national_shape(s):
            return False
        for region in [None] if international else self.regions:
            try:
                num = self.pn.parse(s, region)
            except self.pn.NumberParseException:
                continue
            if self.pn.is_valid_number(num):
                return True
        return False


def _national_shape(s: str) -> bool:
    """A number without a country code looks like one as people write it: an optional ``(area)``, then
    groups split by one kind of separator, the first and last of at least three digits. Dates
    (``2010-09-06 22``), decimals (``123 456 789.00``) and runs of small numbers fail; a bare digit
    run (a count, an id, a timestamp) fails too."""
    rest = re.sub(r"^\(\d{1,5}\)[ .-]?", "", s)
    seps = set(re.findall(r"[ .-]", rest))
    groups = re.split(r"[ .-]", rest)
    if len(seps) > 1 or (not seps and rest == s):
        return False
    return len(groups[0]) >= 3 and len(groups[-1]) >= 3 if len(groups) > 1 else rest != s


# A validator gives the length of the valid span that starts a match (0: not a span of its type).
Validator = Callable[[re.Match[str]], int]


@dataclass
class PiiParams:
    """Attributes:
    mode: ``redact`` (replace each span by its placeholder) or ``reject`` (reject the document, text
        untouched, as ``<label>:<type>`` of the first type found).
    types: the types to look for, any of secret, email, iban, card, ssn, ip, phone.
    placeholders: replacements per type, overriding the defaults (``<EMAIL>``, ``<PHONE>``, ...).
    ip_scope: ``public`` (default: global addresses only, as datatrove's PII formatter) or ``all``
        (loopback, private, link-local and documentation addresses too).
    phone_regions: regions (ISO 3166 alpha-2) whose national formats are accepted for numbers without
        a ``+`` country code; international numbers are accepted from every region.
    """

    mode: str = "redact"
    types: list[str] = field(default_factory=lambda: list(TYPES))
    placeholders: dict[str, str] = field(default_factory=dict)
    phone_regions: list[str] = field(default_factory=lambda: ["US", "GB"])
    ip_scope: str = "public"


@STAGES.add("pii_v1")
class Pii(Transform):
    """Redacts (or rejects documents with) e-mails, phones, IPs, payment cards, IBANs, US SSNs, secrets."""

    Params = PiiParams
    _unpicklable = ("_checks",)

    def validate(self) -> None:
        p: PiiParams = self.params
        if p.mode not in MODES:
            raise ValueError(f"{self.label}: mode must be one of {list(MODES)}, got {p.mode!r}")
        if p.ip_scope not in ("public", "all"):
            raise ValueError(f"{self.label}: ip_scope must be 'public' or 'all', got {p.ip_scope!r}")
        for where, names in (("types", p.types), ("placeholders", list(p.placeholders))):
            bad = sorted(set(names) - set(TYPES))
            if bad:
                raise ValueError(f"{self.label}: unknown {where} {bad}; known: {list(TYPES)}")
        if "phone" in p.types:
            import phonenumbers

            known = phonenumbers.SUPPORTED_REGIONS
            bad = sorted(r for r in p.phone_regions if r not in known)
            if bad:
                raise ValueError(f"{self.label}: unknown phone_regions {bad} (ISO 3166 alpha-2 codes)")

    def setup(self) -> None:
        p: PiiParams = self.params
        self.validate()
        table: dict[str, tuple[str, list[tuple[re.Pattern[str], Validator | None]]]] = {
            "secret": (_SECRET_PRE, [(_SECRET, None)]),
            "email": (_EMAIL_PRE, [(_EMAIL, None)]),
            "iban": (_IBAN_PRE, [(_IBAN, _iban_ok)]),
            "card": (_CARD_PRE, [(_CARD, _card_ok)]),
            "ssn": (_SSN_PRE, [(_SSN, None)]),
            "ip": (
                _IP_PRE,
                [
                    (_IPV4, _IpCheck(v6=False, public_only=p.ip_scope == "public")),
                    (_IPV6, _IpCheck(v6=True, public_only=p.ip_scope == "public")),
                ],
            ),
        }
        if "phone" in p.types:
            table["phone"] = (_PHONE_PRE, [(_PHONE, _PhoneCheck(list(p.phone_regions)))])
        self._checks = [(t, *table[t]) for t in TYPES if t in p.types]

    def output_fields(self) -> list[str]:
        return [t for t in TYPES if t in self.params.types]

    def counters(self, table: pa.Table) -> dict[str, int]:
        """Spans found per type in this batch (the funnel row's ``counts``)."""
        cols = [(t, schema.column_name(self.label, t)) for t in self.output_fields()]
        return {t: int(pc.sum(table.column(c)).as_py() or 0) for t, c in cols if c in table.column_names}

    def process(self, table: pa.Table) -> pa.Table:
        self.ensure_setup()
        p: PiiParams = self.params
        placeholders = {**PLACEHOLDERS, **p.placeholders}
        text = table.column(schema.TEXT).combine_chunks()
        n = table.num_rows
        # Which documents can hold a span of each type: one RE2 pass per type over the whole batch.
        masks = {
            t: np.asarray(
                pc.fill_null(pc.match_substring_regex(text, pre), False).to_numpy(zero_copy_only=False)
            )
            for t, pre, _ in self._checks
        }
        todo = np.flatnonzero(np.logical_or.reduce(list(masks.values()))) if masks else np.array([], int)
        counts = {t: np.zeros(n, np.int32) for t, _, _ in self._checks}
        new_texts: list[str] = []
        if len(todo):
            for i, doc in zip(todo.tolist(), text.take(pa.array(todo)).to_pylist(), strict=True):
                for t, _pre, patterns in self._checks:
                    if not masks[t][i]:
                        continue
                    doc, k = _redact(doc, patterns, placeholders[t])
                    counts[t][i] = k
                new_texts.append(doc)
        out = table
        if p.mode == "redact" and len(todo):
            changed = np.zeros(n, bool)
            changed[todo] = True
            text = pc.replace_with_mask(text, pa.array(changed), pa.array(new_texts, pa.string()))
            out = out.set_column(out.column_names.index(schema.TEXT), schema.TEXT, text)
        for t, _, _ in self._checks:
            out = out.append_column(schema.column_name(self.label, t), pa.array(counts[t], pa.int32()))
        if p.mode == "reject":
            reasons: list[str | None] = [None] * n
            for t, _, _ in reversed(self._checks):  # the first type in check order wins
                for i in np.flatnonzero(counts[t]).tolist():
                    reasons[i] = f"{self.label}:{t}"
            out = with_rejections(out, reasons)
        return out


def _redact(
    doc: str, patterns: list[tuple[re.Pattern[str], Validator | None]], placeholder: str
) -> tuple[str, int]:
    """``doc`` with every valid match of ``patterns`` replaced by ``placeholder``, and how many."""
    total = 0
    for pattern, valid in patterns:
        hits = 0

        def sub(m: re.Match[str], valid: Validator | None = valid) -> str:
            nonlocal hits
            end = len(m.group()) if valid is None else valid(m)
            if end:
                hits += 1
                return placeholder + m.group()[end:]
            return m.group()

        doc = pattern.sub(sub, doc)
        total += hits
    return doc, total

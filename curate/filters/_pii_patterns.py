"""The patterns and validators of ``pii_v1`` (:mod:`curate.filters.pii`), one entry per type.

Each type has a cheap RE2 prefilter (run by pyarrow over a whole batch) and exact Python patterns
(with the lookarounds RE2 lacks) whose matches a validator may still refuse or shorten.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from curate.filters._pii_checks import IpCheck, PhoneCheck

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

# One pattern per kind of secret, each starting with a literal, so that Python's ``re`` searches for
# that literal instead of trying every position against every alternative; the word boundary before
# it is checked by ``_word_start``.
_SECRETS = [
    re.compile(p)
    for p in (
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\s*(?:[A-Za-z-]+: [^\n]*\s+)*[A-Za-z0-9+/=\s]{16,}?"
        r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
        r"A(?:KIA|SIA|GPA|IDA|ROA|NPA)[0-9A-Z]{16}\b",
        r"gh[pousr]_[A-Za-z0-9]{36,255}\b",
        r"github_pat_[A-Za-z0-9_]{60,255}\b",
        r"xox[abposr]-[A-Za-z0-9-]{10,}",
        r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",
        r"[sr]k_(?:live|test)_[0-9A-Za-z]{20,}\b",
        r"sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}",
        r"sk-(?:proj|svcacct)-[A-Za-z0-9_-]{40,}",
        r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        r"(?i:aws_secret_access_key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
    )
]
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
_IBAN = re.compile(r"[A-Z](?<![\w][A-Z])[A-Z]\d{2}(?: ?[A-Z0-9]){11,30}(?!\w)")  # led by its first letter
_IBAN_PRE = r"\b[A-Z]{2}\d{2} ?[A-Z0-9]{4}"
# The patterns below start with a plain character class and check what precedes it in a lookbehind
# after it: Python's ``re`` then skips to the next candidate character in C instead of trying every
# position (2-3x faster than a leading lookbehind).
_CARD = re.compile(  # groups of four (13-19 digits), or Amex / Diners' 4-6-5 / 4-6-4
    r"\d(?<![\w.,-]\d)(?<!\d[ -]\d)"
    r"(?:\d{3}[ -]?(?:\d{4}[ -]?){1,2}\d{3,4}(?:[ -]?\d{1,3})?|\d{3}[ -]?\d{6}[ -]?\d{4,5})"
    r"(?!\w|[.,-]\d|[ -]\d)"  # not a stretch of a longer run of digit groups (an IBAN, a table)
)
_CARD_PRE = r"\d{4}[ -]?\d{4}[ -]?\d{2}|\d{4}[ -]?\d{6}[ -]?\d{4}"
_SSN = re.compile(r"\d(?<![\w-]\d)\d\d-\d\d-\d{4}(?!\w|-\d)")  # issued ranges: _ssn_ok
_SSN_PRE = r"\d{3}-\d{2}-\d{4}"
_IPV4 = re.compile(
    r"\d(?<![\w.]\d)\d{0,2}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?!\w|\.\w)"  # octets: ipaddress in IpCheck
)
_IPV6 = re.compile(
    r"[0-9A-Fa-f:](?<![\w:.][0-9A-Fa-f:])"  # led by its first character; then 2-7 groups in all
    r"(?:(?<=:)|(?<=[0-9A-Fa-f])[0-9A-Fa-f]{0,3}:)(?:[0-9A-Fa-f]{0,4}:){1,6}"
    r"(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?![\w:]|\.\d)"
)
_IPV6_HINT = re.compile(r":[0-9A-Fa-f]{0,4}:")  # in every _IPV6 match (two of its colons)
_IP_PRE = r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}"
_SEP = "[ .\u2013-]"  # a phone number's separators (~ below): space, dot, dash, en dash
_PHONE = re.compile(
    # led by its first character, as the digit-led patterns above; after a dash only where the dash
    # follows no word or number ("phone -503.913.0898", not the tail of "978-3-16-148410-0")
    r"[+(\d](?<![\w+.,/][+(\d])(?<![\w.,/+-]-[+(\d])"
    r"(?:(?<=\+)\d{1,3}~?(?:\(\d{1,5}\)~?)?\d{1,12}(?:~\d{1,8}){0,5}"  # +44 20 7946 0018
    r"|(?<=\()\d{1,5}\)~?\d{2,12}(?:~\d{1,8}){0,5}"  # (212) 736-5000
    r"|(?<=1)(?:~?\(\d{3}\)~?|~\d{3}~)\d{3}~\d{4}"  # 1-800-882-7223, 1 (800) 882-7223: NANP's trunk 1
    r"|(?<=\d)\d{1,11}(?:~\d{1,8}){1,5}"  # 212-736-5000: a lone number is no candidate, unless
    r"|(?<=0)\d{9,10})"  # it keeps its trunk zero (09061701461), and no id's name stands before it
    r"(?P<ext>,? ?(?i:ext(?:ension)?\.?:?|x\.?) ?\d{1,6})?"  # an extension: ext. 12, x123
    r"(?![\w/-]|[.,]\d)".replace("~", _SEP)
)
_PHONE_PRE = r"\+\d{1,3}[ .-]?\(?\d|\(\d{1,5}\)[ .-]?\d|\d{2,5}[ .\x{2013}-]\d{2,5}[ .\x{2013}-]?\d{2}|0\d{9}"

# ISO 13616 IBAN lengths by country (the countries SWIFT's registry lists).
_IBAN_LENGTH = {
    c: int(n)
    for c, n in re.findall(
        r"([A-Z]{2})(\d\d)",
        "AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BI27 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 "
        "DJ27 DK18 DO28 EE20 EG29 ES24 FI18 FK18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 "
        "HU28 IE22 IL23 IQ23 IS26 IT27 JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 LY25 MC27 "
        "MD24 ME22 MK19 MN20 MR27 MT31 MU30 NI28 NL18 NO15 OM23 PK24 PL28 PS29 PT25 QA29 RO24 "
        "RU33 SA24 SC31 SD18 SE24 SI19 SK24 SM27 SO23 ST25 SV28 TL23 TN24 TR26 UA29 VA22 VG24 "
        "XK20 YE30",
    )
}
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


def _word_start(m: re.Match[str]) -> int:
    """The match does not start inside a word (``\\b`` kept out of the pattern so that it starts
    with a literal)."""
    i = m.start()
    return 0 if i and (m.string[i - 1].isalnum() or m.string[i - 1] == "_") else len(m.group())


_IBAN_HEAD = re.compile(r"\b[A-Z]{2}\d\d(?: ?[A-Z0-9]{4})* ?$")
# The validators' own patterns, compiled once: through ``re.sub(str, ...)`` each call paid a lookup in
# ``re``'s pattern cache, a tenth of pii_v1's time on PII-dense text (benchmarks/pii_profile.py).
_CARD_SEP = re.compile(r"[ -]")


def _ssn_ok(m: re.Match[str]) -> int:
    """Never-issued SSNs: area 000, 666 or 9xx, group 00, serial 0000."""
    area, group, serial = m.group().split("-")
    bad = area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000"
    return 0 if bad else len(m.group())


def _card_ok(m: re.Match[str]) -> int:
    if _IBAN_HEAD.search(m.string, max(0, m.start() - 40), m.start()):
        return 0  # the tail of an IBAN (one whose checksum failed)
    digits = _CARD_SEP.sub("", m.group())
    ok = 13 <= len(digits) <= 19 and bool(_CARD_PREFIX.match(digits)) and luhn_ok(digits)
    return len(m.group()) if ok else 0


def _iban_ok(m: re.Match[str]) -> int:
    return len(m.group()) if iban_ok(m.group()) else 0


# A validator gives the length of the valid span that starts a match (0: not a span of its type).
Validator = Callable[[re.Match[str]], int]


class Scanner(Protocol):
    """What :func:`redact` needs of a pattern: ``re.Pattern.sub`` with a function."""

    def sub(self, repl: Callable[[re.Match[str]], str], string: str) -> str: ...


class _Hinted:
    """``pattern``, run only on a document where ``hint`` (a necessary part of every match, which
    ``re`` finds fast because it starts with a literal) occurs: the IPv6 pattern can start at any hex
    letter, so scanning English text for it is slow, and two colons with 0-4 hex digits between are
    rare."""

    def __init__(self, pattern: re.Pattern[str], hint: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.hint = hint

    def sub(self, repl: Callable[[re.Match[str]], str], string: str) -> str:
        return self.pattern.sub(repl, string) if self.hint.search(string) else string


class _Anchored:
    """``pattern.sub`` for a pattern whose every match holds exactly one ``anchor`` character, at most
    ``reach`` characters after the match's start (an e-mail: one ``@``, a local part of at most 64
    characters). Instead of trying the pattern at every letter of the document (the e-mail pattern
    starts with a letter class, so ``re`` tries every letter), it is tried only at the ``reach``
    positions before each anchor, in order; the matches and what replaces them are those of
    ``pattern.sub`` (``tests/filters/test_pii_outputs.py`` checks both on the same texts)."""

    def __init__(self, pattern: re.Pattern[str], anchor: str, reach: int) -> None:
        self.pattern = pattern
        self.anchor = anchor
        self.reach = reach

    def sub(self, repl: Callable[[re.Match[str]], str], string: str) -> str:
        out: list[str] = []
        pos = 0  # the end of the last match: where sub's scan resumes
        tried = 0  # starts below this were tried (for an earlier anchor) and failed
        i = string.find(self.anchor)
        while i != -1:
            m = None
            for start in range(max(pos, tried, i - self.reach), i):
                m = self.pattern.match(string, start)
                if m:
                    break
            if m is None:
                tried = i + 1  # a match cannot start at the anchor itself
                i = string.find(self.anchor, i + 1)
                continue
            out += (string[pos : m.start()], repl(m))
            pos = tried = m.end()
            i = string.find(self.anchor, pos)
        if not out:
            return string
        out.append(string[pos:])
        return "".join(out)


Patterns = list[tuple[Scanner, Validator | None]]


def checks(
    types: list[str], *, phone_regions: list[str], public_ips_only: bool
) -> list[tuple[str, str, Patterns]]:
    """``(type, RE2 prefilter, patterns)`` for each of ``types``, in the order of :data:`TYPES`."""
    table: dict[str, tuple[str, Patterns]] = {
        "secret": (_SECRET_PRE, [(p, _word_start) for p in _SECRETS]),
        "email": (_EMAIL_PRE, [(_Anchored(_EMAIL, "@", 64), None)]),
        "iban": (_IBAN_PRE, [(_IBAN, _iban_ok)]),
        "card": (_CARD_PRE, [(_CARD, _card_ok)]),
        "ssn": (_SSN_PRE, [(_SSN, _ssn_ok)]),
        "ip": (
            _IP_PRE,
            [
                (_IPV4, IpCheck(v6=False, public_only=public_ips_only)),
                (_Hinted(_IPV6, _IPV6_HINT), IpCheck(v6=True, public_only=public_ips_only)),
            ],
        ),
    }
    if "phone" in types:  # imports phonenumbers
        table["phone"] = (_PHONE_PRE, [(_PHONE, PhoneCheck(list(phone_regions)))])
    return [(t, *table[t]) for t in TYPES if t in types]


def redact(
    doc: str,
    patterns: Patterns,
    placeholder: str,
    found: list[str] | None = None,
    where: list[tuple[int, int]] | None = None,
) -> tuple[str, int]:
    """``doc`` with every valid match of ``patterns`` replaced by ``placeholder``, and how many; each
    span replaced is appended to ``found`` when given, its start and end (in the text the pattern saw)
    to ``where``."""
    total = 0
    for pattern, valid in patterns:
        hits = 0

        def sub(m: re.Match[str], valid: Validator | None = valid) -> str:
            nonlocal hits
            end = len(m.group()) if valid is None else valid(m)
            if end:
                hits += 1
                if found is not None:
                    found.append(m.group()[:end])
                if where is not None:
                    where.append((m.start(), m.start() + end))
                return placeholder + m.group()[end:]
            return m.group()

        doc = pattern.sub(sub, doc)
        total += hits
    return doc, total

"""The IP and phone validators of ``pii_v1`` (:mod:`curate.filters._pii_patterns` holds the patterns
whose matches they refuse or shorten): an IP must parse (and be global with ``public_ips_only``), a
phone number must be one to ``phonenumbers``. Each caches its verdicts per worker.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from phonenumbers import PhoneNumber

# The context of a dotted quad (``ipv4_in_context``). A word that names an address, within 32 characters
# before it on its line, or a port / prefix length after it, is an IP cue.
_IP_CUE = re.compile(
    r"(?i)\b(?:ip|ipv4|ips|address(?:es)?|addr|host(?:name)?s?|server|dns|gateway|nameserver|resolver"
    r"|ping|router|proxy|subnet|netmask|firewall|inet|traceroute|nslookup|telnet|ssh)\b|://|@"
)
_CUE_AFTER = re.compile(r":\d{1,5}\b|/\d{1,2}\b")
# A section, clause, version or reference word right before it: "section 6.1.8.32", "§ 9.5.1.6",
# "erratum 1.2.3.4", "version 20.13.12.0", "see 3.3.2.1." (a colon, bracket or "no." may come between).
_SECTION_WORD = re.compile(
    r"(?i)(?:\b(?:sections?|sect?|chapters?|chap|clauses?|paragraphs?|paras?|appendix|annex|tables?"
    r"|fig(?:ure)?s?|items?|steps?|rules?|articles?|art|parts?|notes?|errat(?:a|um)|versions?|ver|v"
    r"|releases?|rev(?:ision)?s?|polic(?:y|ies)|see|ref|refer\s+to|cf|nos?|linux|kernel)\.?|\u00a7)"
    r"[\s(\[#:]*$"
)
# A numbered heading: at the start of its line (after list or markup characters), then a dot or a title.
_LINE_START = re.compile(r"[ \t>*#|+\u2022-]*")
_TITLE_AFTER = re.compile(r"\.(?:\s|$)|[ \t]+[A-Z_`*\"\u201c]")
# Glued to a word ("novas-3.1.1.3", "Firefox/2.0.0.11", "pkg==3.1.1.3", "v1.2.3.4", "formula:2.1.3.2")
# or one end of a range ("2.1.3.2-3"): a version or a numbering, unless an IP cue says otherwise.
_GLUED = re.compile(r"\w(?:[-/:v]|==?)$")
_RANGE_AFTER = re.compile(r"-\d")
_DOT_AFTER = re.compile(r"\.(?:\s|$)")
# Public resolvers that text names without a cue; any other quad of a numbering's shape needs one.
WELL_KNOWN_V4 = frozenset(
    [
        "8.8.8.8",
        "8.8.4.4",
        "1.1.1.1",
        "1.0.0.1",
        "1.1.1.2",
        "1.0.0.2",
        "1.1.1.3",
        "1.0.0.3",
        "9.9.9.9",
        "9.9.9.10",
        "9.9.9.11",
        "4.2.2.1",
        "4.2.2.2",
        "4.2.2.3",
        "4.2.2.4",
        "4.2.2.5",
        "4.2.2.6",
    ]
)
# The validators' own patterns, compiled once: through ``re.sub(str, ...)`` each call paid a lookup in
# ``re``'s pattern cache, a tenth of pii_v1's time on PII-dense text (benchmarks/pii_profile.py).
_PHONE_SEP = re.compile(r"[ .-]")
_AREA = re.compile(r"^\(\d{1,5}\)[ .-]?")
_NANP_TRUNK = re.compile(r"1(?:[ .-](?=\(?\d)|(?=\())")  # "1-800-...", "1 (800) ...", "1(800)..."
_TRUNK_ZERO = re.compile(r"0\d{9,10}")  # a bare national number with its trunk zero: 09061701461
# A bare number with its trunk zero is a phone number unless an identifier's name stands right before it
# ("ISBN 0856674419", "order 07734396839"): on the web corpora, Wikipedia and the Python and kernel docs
# every bare one taken was a phone number, but an id with a leading zero would pass the check too.
ID_CUE = re.compile(
    r"(?i)\b(?:isbn(?:-1[03])?|issn|doi|ref|reference|order|invoice|id|sku|serial|code|ean|upc|tracking)"
    r"\b[^\n\w]{0,3}$"
)
_DOTTED_QUAD = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_SEP_TAIL = re.compile(r"[.\u2013-]\d+$")
# A validator's verdict on a candidate string is cached per worker, at most this many entries (a page
# repeats its phone number, a corpus its company numbers); the cache is cleared when full.
_CACHE_SIZE = 1 << 16


# IANA's IPv4 special-purpose registry (RFC 6890 and later): boundaries of the table below besides
# those ``ipaddress`` itself names, so the table stays exact if a Python release moves a range.
_V4_SPECIAL = (
    "0.0.0.0/8 10.0.0.0/8 100.64.0.0/10 127.0.0.0/8 169.254.0.0/16 172.16.0.0/12 192.0.0.0/24 "
    "192.0.0.0/29 192.0.0.8/32 192.0.0.9/32 192.0.0.10/32 192.0.0.170/31 192.0.2.0/24 192.31.196.0/24 "
    "192.52.193.0/24 192.88.99.0/24 192.168.0.0/16 192.175.48.0/24 198.18.0.0/15 198.51.100.0/24 "
    "203.0.113.0/24 224.0.0.0/4 240.0.0.0/4 255.255.255.255/32"
)


def _v4_global_table() -> tuple[list[int], list[bool]]:
    """``ipaddress``'s own ``is_global`` as a sorted table of IPv4 ranges: the space cut at the start and
    end of every network ``ipaddress`` names in its constants and of every IANA special-purpose block,
    each range's value asked of ``ipaddress`` at its first address. ``is_global`` tests membership in
    those networks only, so it is constant on each range; one ``bisect`` replaces ~17 network tests."""
    nets = set(ipaddress.ip_network(n) for n in _V4_SPECIAL.split())
    consts = getattr(ipaddress.IPv4Address, "_constants", None)  # CPython's class of named networks
    for v in vars(consts).values() if consts is not None else ():
        nets |= {
            x for x in (v if isinstance(v, list | tuple) else [v]) if isinstance(x, ipaddress.IPv4Network)
        }
    cuts = {0} | {int(n.network_address) for n in nets} | {int(n.broadcast_address) + 1 for n in nets}
    starts = sorted(c for c in cuts if c < 1 << 32)
    return starts, [ipaddress.IPv4Address(c).is_global for c in starts]


_V4_STARTS, _V4_GLOBAL = _v4_global_table()


def v4_is_global(s: str) -> bool | None:
    """``ipaddress.ip_address(s).is_global`` for a dotted quad of 1-3 digit octets (``_IPV4``'s shape);
    ``None`` where ``ipaddress`` refuses it (an octet over 255, a leading zero)."""
    value = 0
    for octet in s.split("."):
        if (len(octet) > 1 and octet[0] == "0") or int(octet) > 255:
            return None
        value = value << 8 | int(octet)
    return _V4_GLOBAL[bisect.bisect_right(_V4_STARTS, value) - 1]


class IpCheck:
    """IPv6 candidates must parse (``ipaddress``); with ``public_only`` an address must also be global,
    so loopback, private, link-local and documentation ranges (``192.0.2.0/24``, ``2001:db8::/32``),
    which identify no one, are left alone. Where a dotted quad stands decides whether it is one
    (:func:`ipv4_in_context`)."""

    NO, YES, WITH_CUE = 0, 1, 2

    def __init__(self, *, v6: bool, public_only: bool) -> None:
        self.v6 = v6
        self.public_only = public_only
        self._verdicts: dict[str, int] = {}  # candidate -> NO / YES / WITH_CUE (its context aside)

    def __call__(self, m: re.Match[str]) -> int:
        s = m.group()
        verdict = self._verdicts.get(s)
        if verdict is None:
            if len(self._verdicts) >= _CACHE_SIZE:
                self._verdicts.clear()
            verdict = self._verdicts[s] = self._verdict(s)
        if verdict == self.NO or (not self.v6 and not ipv4_in_context(m, numbering=verdict == self.WITH_CUE)):
            return 0
        return len(s)

    def _verdict(self, s: str) -> int:
        if self.v6:
            groups = [g for g in s.split(":") if g]
            if len(groups) < 3 and not any(len(g) >= 3 for g in groups):
                return self.NO  # "1::2" is a slice far more often than an address
        if self.v6:
            try:
                is_global = ipaddress.ip_address(s).is_global
            except ValueError:
                return self.NO
        else:
            v4 = v4_is_global(s)
            if v4 is None:
                return self.NO
            is_global = v4
        if self.public_only and not is_global:
            return self.NO
        octets = [] if self.v6 else [int(o) for o in s.split(".")]
        # a section's or version's shape: a small first number, every number under 100 ("6.1.8.32")
        numbering = bool(octets) and octets[0] < 32 and max(octets) < 100
        return self.WITH_CUE if numbering else self.YES


def ipv4_in_context(m: re.Match[str], *, numbering: bool) -> bool:
    """Whether a valid dotted quad is an address where it stands, not a section, clause or version
    number. Never in a numbered heading (at the start of its line, then a dot or a title) or right after
    a section or version word; else always with an IP cue; else not glued to a word or a range; else a
    quad of a numbering's shape (``numbering``: first number under 32, all under 100, as ``6.1.8.32``)
    only if a well-known public resolver (``8.8.8.8``), and a quad of numbers under 100 not before a
    final dot (``45.6.78.9.``: where a section number ends)."""
    text, i, j = m.string, m.start(), m.end()
    line = text.rfind("\n", 0, i) + 1
    before = text[max(line, i - 40) : i]
    at_line_start = i - line <= 8 and _LINE_START.fullmatch(text, line, i) is not None
    if (at_line_start and _TITLE_AFTER.match(text, j)) or _SECTION_WORD.search(before):
        return False
    if _IP_CUE.search(before[-32:]) or _CUE_AFTER.match(text, j):
        return True
    if _GLUED.search(before) or _RANGE_AFTER.match(text, j):
        return False
    if numbering:
        return m.group() in WELL_KNOWN_V4
    return not (_DOT_AFTER.match(text, j) and all(len(o) < 3 for o in m.group().split(".")))


class PhoneCheck:
    """Validates phone candidates with ``phonenumbers`` (imported once per worker, in ``setup``); its
    parse and validation are most of pii_v1's time on PII-dense text, so verdicts are cached."""

    def __init__(self, regions: list[str]) -> None:
        import phonenumbers

        self.pn = phonenumbers
        self.regions = regions
        self._verdicts: dict[str, bool] = {}
        self._lengths: dict[int, frozenset[int]] = {}

    def __call__(self, m: re.Match[str]) -> int:
        """The length of the valid number that starts the match, with its extension (0: none). One
        trailing group split off by a space may be dropped when the number itself uses other separators
        ("415-555-2671 24 hours"); a run of groups with one separator ("3410-135918-12345") is taken
        whole or not at all; a bare number is none after an identifier's name (:data:`ID_CUE`)."""
        s = m.group()
        n = m.start("ext") - m.start() if m.group("ext") else len(s)
        number = s[:n]
        if _TRUNK_ZERO.fullmatch(number) and ID_CUE.search(m.string, max(0, m.start() - 24), m.start()):
            return 0
        if self._valid(number):
            return len(s)
        cut = number.rfind(" ")
        kept = number[:cut]
        if cut > 0 and (_SEP_TAIL.search(kept) or _TRUNK_ZERO.fullmatch(kept)) and self._valid(kept):
            return cut
        return 0

    def _valid(self, s: str) -> bool:
        ok = self._verdicts.get(s)
        if ok is None:
            if len(self._verdicts) >= _CACHE_SIZE:
                self._verdicts.clear()
            ok = self._verdicts[s] = self._check(s)
        return ok

    def _check(self, s: str) -> bool:
        n_digits = sum(map(str.isdigit, s))
        if not 7 <= n_digits <= 15:
            return False
        international = s.startswith("+")
        if _DOTTED_QUAD.fullmatch(s):
            return False  # an IPv4 address that pii_v1's ip check left (private, or a version)
        if not international and not national_shape(s):
            return False
        for region in [None] if international else self.regions:
            try:
                num = self.pn.parse(s, region)
            except self.pn.NumberParseException:
                continue
            if self._length_possible(num) and self.pn.is_valid_number(num):
                return True
        return False

    def _length_possible(self, num: PhoneNumber) -> bool:
        """Whether the national number's length is one the general description of some region of its
        country code allows. ``is_valid_number`` refuses it otherwise (its first test, in every region
        it tries), but only after trying each region (25 for +1), so this answers the same, sooner.
        True where a region lists no lengths (no test then)."""
        cc = num.country_code or 0
        lengths = self._lengths.get(cc)
        if lengths is None:
            found: set[int] = set()
            for region in self.pn.COUNTRY_CODE_TO_REGION_CODE.get(cc, ()):
                meta = self.pn.PhoneMetadata.metadata_for_region_or_calling_code(cc, region)
                desc = meta.general_desc if meta is not None else None
                if desc is None or not desc.possible_length:
                    found = set()  # a region without lengths: no shortcut for this country code
                    break
                found |= set(desc.possible_length)
            lengths = self._lengths[cc] = frozenset(found)
        return not lengths or len(self.pn.national_significant_number(num)) in lengths


def national_shape(s: str) -> bool:
    """A number without a country code looks like one as people write it: an optional ``(area)``, then
    groups split by one kind of separator (an en dash counts as a dash), the first and last of at least
    three digits; or that after NANP's trunk ``1`` and a separator (``1-800-882-7223``,
    ``1 (800) 882-7223``). Dates (``2010-09-06 22``), decimals (``123 456 789.00``) and runs of small
    numbers fail; a bare digit run (a count, an id, a timestamp) fails too, but for 10 or 11 digits
    led by a trunk zero (``09061701461``), which :class:`PhoneCheck` refuses after an id's name."""
    if s.count("\u2013") == 1:
        return False  # one en dash is a range ("(1925) 120\u2013129"); a number has two ("715\u2013600\u20136759")
    s = s.replace("\u2013", "-")
    if _TRUNK_ZERO.fullmatch(s):
        return True
    trunk = _NANP_TRUNK.match(s)
    if trunk and sum(map(str.isdigit, s)) == 11:
        return _grouped(s[trunk.end() :])
    return _grouped(s)


def _grouped(s: str) -> bool:
    rest = _AREA.sub("", s)
    seps = set(_PHONE_SEP.findall(rest))
    groups = _PHONE_SEP.split(rest)
    if len(seps) > 1 or (not seps and rest == s):
        return False
    if rest == s and len(groups) == 2 and (seps == {"."} or (seps == {"-"} and len(groups[0]) > 4)):
        return False  # a decimal (229291.1234) or a range (32768-65535)
    return len(groups[0]) >= 3 and len(groups[-1]) >= 3 if len(groups) > 1 else rest != s

"""The labelled PII set of ``bench_pii.py``: real web documents with planted values and planted decoys.

Each document of the source text gets 0-3 planted values (a random type each) and 0-2 decoys, put at
sentence boundaries inside a short phrase ("Call +44 20 7946 0018 today."). Values are valid by
construction: e-mails from name and domain lists; phones from ``phonenumbers``' example numbers of 14
regions with random subscriber digits, kept only when valid, written in INTERNATIONAL or E.164 form,
and for US/GB (pii_v1's default ``phone_regions``) also in national forms; public IPv4 / IPv6
addresses (``ipaddress.is_global``); Visa / Mastercard / Amex / Discover numbers with a Luhn digit,
grouped by spaces, dashes or not at all; IBANs of 8 countries with computed check digits, in groups
of four or compact; US SSNs outside the never-issued ranges; secrets (AWS key ids, GitHub and
Stripe tokens, Google API keys, PEM private-key blocks). Decoys are what a careless detector takes
for those: Luhn-failing card numbers, IBANs with a wrong checksum, SSNs in never-issued areas, dates
and times, version strings, ISBNs, order numbers, prices, UUIDs, git hashes, private and loopback IPs.

Deterministic for a given seed. Text that was already in the document (real PII in web pages) is
labelled by the run on the unplanted document, which ``bench_pii.py`` reports apart.
"""

from __future__ import annotations

import ipaddress
import random
import re
import string
from dataclasses import dataclass, field

FIRST = ["jane", "john", "maria", "wei", "ahmed", "olga", "pierre", "sofia", "kenji", "li", "anna", "omar"]
LAST = ["doe", "smith", "garcia", "chen", "khan", "ivanova", "martin", "rossi", "tanaka", "nguyen", "brown"]
DOMAINS = [
    "gmail.com",
    "yahoo.co.uk",
    "outlook.com",
    "acme-corp.com",
    "mail.example.org",
    "uni-bonn.de",
    "company.io",
    "post.harvard.edu",
    "web.de",
    "orange.fr",
]
PHONE_REGIONS = ["US", "GB", "DE", "FR", "IN", "BR", "JP", "AU", "ES", "IT", "NL", "MX", "CA", "ZA"]
IBAN_BBAN = {
    "DE": "8n10n",
    "GB": "4a14n",
    "FR": "23n",
    "NL": "4a10n",
    "ES": "20n",
    "IT": "1a22c",
    "BE": "12n",
    "CH": "17n",
}
PHRASES = {
    "email": ["Contact me at {}", "Email: {}", "send your CV to {}", "write to {} for details"],
    "phone": ["Call {} today", "Phone: {}", "Tel. {}", "reach our office on {}", "or text {}"],
    "ip": ["the request came from {}", "IP {}", "server {} answered", "blocked {} yesterday"],
    "card": ["Card number {}", "paid with {}", "my card is {}", "cc {}"],
    "iban": ["IBAN {}", "transfer to {}", "account {}"],
    "ssn": ["SSN {}", "social security number {}", "his SSN is {}"],
    "secret": ["key {}", "export TOKEN={}", "using {} in the config"],
}
DECOY_PHRASES = ["see {}", "version {}", "ref {}", "{} in total", "on {}", "item {}"]


@dataclass
class LabelledDoc:
    id: str
    original: str
    text: str
    planted: list[tuple[str, str]] = field(default_factory=list)  # (type, value)
    decoys: list[tuple[str, str]] = field(default_factory=list)  # (kind, value)


def _luhn_digit(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return str((10 - total % 10) % 10)


def _card(rng: random.Random, valid: bool = True) -> str:
    prefix, length = rng.choice(
        [("4", 16), ("51", 16), ("55", 16), ("2221", 16), ("34", 15), ("37", 15), ("6011", 16)]
    )
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    check = _luhn_digit(body)
    if not valid:
        check = str((int(check) + rng.randint(1, 9)) % 10)
    digits = body + check
    sep = rng.choice([" ", "-", ""])
    if length == 15:
        return sep.join([digits[:4], digits[4:10], digits[10:]])
    return sep.join(digits[i : i + 4] for i in range(0, 16, 4))


def _iban(rng: random.Random, valid: bool = True) -> str:
    country = rng.choice(sorted(IBAN_BBAN))
    bban = ""
    for n, kind in re.findall(r"(\d+)([nac])", IBAN_BBAN[country]):
        pool = {"n": string.digits, "a": string.ascii_uppercase, "c": string.ascii_uppercase + string.digits}[
            kind
        ]
        bban += "".join(rng.choice(pool) for _ in range(int(n)))
    num = int("".join(str(int(ch, 36)) for ch in bban + country + "00"))
    check = 98 - num % 97
    if not valid:
        check = (check + rng.randint(1, 50)) % 97 + 2
    s = f"{country}{check:02d}{bban}"
    return " ".join(s[i : i + 4] for i in range(0, len(s), 4)) if rng.random() < 0.6 else s


def _ssn(rng: random.Random, valid: bool = True) -> str:
    area = rng.choice([a for a in range(1, 900) if a != 666]) if valid else rng.choice([0, 666, 901, 987])
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


def _phone(rng: random.Random) -> str:
    import phonenumbers

    region = rng.choice(PHONE_REGIONS)
    example = phonenumbers.example_number_for_type(
        region, rng.choice([phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE])
    )
    for _ in range(50):
        nat = str(example.national_number)
        nat = nat[:-4] + "".join(rng.choice(string.digits) for _ in range(4))
        num = phonenumbers.parse(f"+{example.country_code}{nat}", None)
        if phonenumbers.is_valid_number(num):
            break
    else:
        num = example
    fmts = [phonenumbers.PhoneNumberFormat.INTERNATIONAL, phonenumbers.PhoneNumberFormat.E164]
    if region in ("US", "GB"):
        fmts += [phonenumbers.PhoneNumberFormat.NATIONAL] * 2
    text = phonenumbers.format_number(num, rng.choice(fmts))
    if region == "US" and rng.random() < 0.3:  # 415-555-0134 / 415.555.0134
        nat = str(num.national_number)
        text = rng.choice("-.").join([nat[:3], nat[3:6], nat[6:]])
    return text


def _ip(rng: random.Random) -> str:
    while True:
        if rng.random() < 0.7:
            a = ipaddress.IPv4Address(rng.getrandbits(32))
            if a.is_global and max(int(o) for o in str(a).split(".")) >= 32:
                return str(a)
        else:
            a6 = ipaddress.IPv6Address((0x2 << 124) | rng.getrandbits(124))  # 2000::/3, global unicast
            if a6.is_global:
                return a6.compressed if rng.random() < 0.7 else a6.exploded


def _secret(rng: random.Random) -> str:
    up, alnum = string.ascii_uppercase + string.digits, string.ascii_letters + string.digits
    kind = rng.randrange(5)
    if kind == 0:
        return "AKIA" + "".join(rng.choice(up) for _ in range(16))
    if kind == 1:
        return "ghp_" + "".join(rng.choice(alnum) for _ in range(36))
    if kind == 2:
        return "sk_live_" + "".join(rng.choice(alnum) for _ in range(24))
    if kind == 3:
        return "AIza" + "".join(rng.choice(alnum + "-_") for _ in range(35))
    body = "\n".join("".join(rng.choice(alnum + "+/") for _ in range(64)) for _ in range(4))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


def _email(rng: random.Random) -> str:
    local = rng.choice(FIRST) + rng.choice([".", "_", "", "-"]) + rng.choice(LAST)
    if rng.random() < 0.3:
        local += str(rng.randint(1, 99))
    return f"{local}@{rng.choice(DOMAINS)}"


def build(docs: list[tuple[str, str]], seed: int = 0) -> list[LabelledDoc]:
    """Plant values and decoys into ``docs`` (``(id, text)`` pairs)."""
    rng = random.Random(seed)
    makers = {
        "email": lambda: _email(rng),
        "phone": lambda: _phone(rng),
        "ip": lambda: _ip(rng),
        "card": lambda: _card(rng),
        "iban": lambda: _iban(rng),
        "ssn": lambda: _ssn(rng),
        "secret": lambda: _secret(rng),
    }
    decoy_makers = _decoy_makers(rng)
    out = []
    for doc_id, text in docs:
        cut = [m.end() for m in re.finditer(r"[.!?] ", text)] or [len(text)]
        inserts: list[tuple[int, str]] = []
        ld = LabelledDoc(id=doc_id, original=text, text=text)
        for _ in range(rng.randint(0, 3)):
            t = rng.choice(sorted(makers))
            v = makers[t]()
            ld.planted.append((t, v))
            inserts.append(
                (rng.choice(cut), rng.choice(PHRASES[t]).format(v) + rng.choice([". ", ", ", "; "]))
            )
        for _ in range(rng.randint(0, 2)):
            kind, make = rng.choice(decoy_makers)
            v = make()
            ld.decoys.append((kind, v))
            inserts.append((rng.choice(cut), rng.choice(DECOY_PHRASES).format(v) + rng.choice([". ", ", "])))
        for pos, s in sorted(inserts, reverse=True):
            ld.text = ld.text[:pos] + s + ld.text[pos:]
        out.append(ld)
    return out


def _decoy_makers(rng: random.Random) -> list[tuple[str, object]]:
    d = string.digits
    hexd = "0123456789abcdef"

    def private_ip() -> str:
        return rng.choice(
            [
                f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                f"172.{rng.randint(16, 31)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
            ]
        )

    return [
        ("card_bad_luhn", lambda: _card(rng, valid=False)),
        ("iban_bad_checksum", lambda: _iban(rng, valid=False)),
        ("ssn_never_issued", lambda: _ssn(rng, valid=False)),
        (
            "date_time",
            lambda: (
                f"20{rng.randint(0, 24):02d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
            ),
        ),
        ("version", lambda: ".".join(str(rng.randint(0, 20)) for _ in range(4))),
        (
            "isbn",
            lambda: (
                f"978-{rng.randint(0, 9)}-{rng.randint(100, 999)}-{rng.randint(10000, 99999)}-{rng.randint(0, 9)}"
            ),
        ),
        ("order_number", lambda: "".join(rng.choice(d) for _ in range(rng.randint(8, 12)))),
        ("price", lambda: f"${rng.randint(1, 999)},{rng.randint(100, 999)}.{rng.randint(10, 99)}"),
        ("uuid", lambda: "-".join("".join(rng.choice(hexd) for _ in range(n)) for n in (8, 4, 4, 4, 12))),
        ("git_sha", lambda: "".join(rng.choice(hexd) for _ in range(40))),
        ("private_ip", private_ip),
        ("loopback_ip", lambda: f"127.0.0.{rng.randint(1, 254)}"),
        (
            "decimal_table",
            lambda: " ".join(f"{rng.randint(10, 999)}.{rng.randint(0, 99):02d}" for _ in range(4)),
        ),
    ]

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
ip          IPv4 (four octets 0-255, not part of a longer dotted number,  ``<IP_ADDRESS>``
            not a numbered heading nor after a section / version / errata
            word; a section's shape, first number under 32 and all under
            100, only with an IP cue or as a well-known resolver such as
            8.8.8.8: ``_pii_checks.ipv4_in_context``)
            and IPv6 (``ipaddress`` validates; needs 3 groups or a group
            of 3+ hex digits, so slices like ``a[1::2]`` are not taken);
            global addresses only unless ``ip_scope: all``
phone       ``+`` international numbers, or national numbers of           ``<PHONE>``
            ``phone_regions`` written as people write them (one kind of
            separator, first and last group of 3+ digits; NANP's trunk
            ``1-`` / ``1 (800)`` included; a bare run of 10-11 digits
            only with its trunk zero and no id's name before it), with
            an extension (``ext. 12``, ``x123``); valid per the
            ``phonenumbers`` library's metadata
=========== ============================================================ =================

Not covered: names, street addresses, dates of birth, ID numbers other than US SSNs; phone numbers
written with letters (``1-800-FLOWERS``), without their area code, run into a price or a word, or of a
region outside ``phone_regions`` without ``+``. Recall and precision per form, on a hand-labelled sample
of the web corpora: ``BENCHMARKS.md``. In ``mode: redact``
the runner also passes rows that stages before this one reject through :meth:`Pii.scrub` before writing
them (:mod:`curate.runtime.segments`).

Columns (``pii_v1.<type>``): how many spans of each type the document had (int32), for every type
in ``types``. ``mode: redact`` (default) replaces each span by its placeholder; ``mode: reject``
leaves the text alone and rejects a document with any span as ``pii_v1:<type>`` (the first type in the
order above). Vectorized where it counts: one RE2 pass per type over the whole batch
(``pyarrow.compute.match_substring_regex``) picks the documents that can hold a span; only those go
through Python's ``re`` and the validators. On PII-dense text the validators dominate: phone and IP
verdicts are cached per stage (so per worker), e-mails are tried only before an ``@``, IPv6 only where
two colons hint at one (:mod:`curate.filters._pii_patterns`; ``BENCHMARKS.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.core import schema
from curate.core.registry import STAGES
from curate.core.stage import Transform, with_rejections
from curate.filters._pii_patterns import PLACEHOLDERS, TYPES, checks, iban_ok, luhn_ok, redact
from curate.io.sources import DETAIL

__all__ = ["PLACEHOLDERS", "TYPES", "Pii", "PiiParams", "iban_ok", "luhn_ok", "masker"]

MODES = ("redact", "reject")


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
        self._checks = checks(p.types, phone_regions=p.phone_regions, public_ips_only=p.ip_scope == "public")

    def spans(self, text: str) -> list[tuple[str, str]]:
        """``(type, span)`` for every span :meth:`process` would replace in ``text``, in check order."""
        return [(t, text[s:e]) for t, s, e in self.locate(text)]

    def locate(self, text: str) -> list[tuple[str, int, int]]:
        """``(type, start, end)`` in ``text`` of every span :meth:`process` would replace, in check order,
        each pattern's spans in text order."""
        self.ensure_setup()
        out: list[tuple[str, int, int]] = []
        done: list[
            tuple[int, int, int]
        ] = []  # each span replaced so far: start, end in text, placeholder length
        current = text
        for t, _pre, patterns in self._checks:
            for pattern in patterns:  # one pass each: the positions a pass reports are in the text it sees
                where: list[tuple[int, int]] = []
                current, _ = redact(current, [pattern], PLACEHOLDERS[t], where=where)
                new = [(_to_original(s, done), e - s) for s, e in where]
                out += [(t, s, s + n) for s, n in new]
                done = sorted(done + [(s, s + n, len(PLACEHOLDERS[t])) for s, n in new])
        return out

    def output_fields(self) -> list[str]:
        return [t for t in TYPES if t in self.params.types]

    def counters(self, table: pa.Table) -> dict[str, int]:
        """Spans found per type in this batch (the funnel row's ``counts``)."""
        cols = [(t, schema.column_name(self.label, t)) for t in self.output_fields()]
        return {t: int(pc.sum(table.column(c)).as_py() or 0) for t, c in cols if c in table.column_names}

    @property
    def redacts_rejected(self) -> bool:
        """In ``mode: redact`` the runner passes rows that stages before this one rejected through
        :meth:`scrub` before writing them, so that no span it finds reaches the run folder raw."""
        return self.params.mode == "redact"

    def scrub(self, table: pa.Table, columns: tuple[str, ...] = (schema.TEXT, DETAIL)) -> pa.Table:
        """``table`` with the string ``columns`` it has (the text, a quarantined row's raw ``detail``)
        redacted as ``mode: redact`` redacts the text; no count columns added, every other column kept."""
        self.ensure_setup()
        placeholders = {**PLACEHOLDERS, **self.params.placeholders}
        for name in columns:
            if name in table.column_names and pa.types.is_string(table.schema.field(name).type):
                col, _ = self._redacted(table.column(name).combine_chunks(), placeholders)
                table = table.set_column(table.column_names.index(name), name, col)
        return table

    def _redacted(
        self, text: pa.Array, placeholders: dict[str, str]
    ) -> tuple[pa.Array, dict[str, np.ndarray]]:
        """``text`` with every span replaced by its type's placeholder, and the spans per type per row."""
        n = len(text)
        # Which documents can hold a span of each type: one RE2 pass per type over the whole batch.
        masks = {
            t: np.asarray(
                pc.fill_null(pc.match_substring_regex(text, pre), False).to_numpy(zero_copy_only=False)
            )
            for t, pre, _ in self._checks
        }
        todo = np.flatnonzero(np.logical_or.reduce(list(masks.values()))) if masks else np.array([], int)
        counts = {t: np.zeros(n, np.int32) for t, _, _ in self._checks}
        if not len(todo):
            return text, counts
        new_texts: list[str] = []
        for i, doc in zip(todo.tolist(), text.take(pa.array(todo)).to_pylist(), strict=True):
            for t, _pre, patterns in self._checks:
                if not masks[t][i]:
                    continue
                doc, k = redact(doc, patterns, placeholders[t])
                counts[t][i] = k
            new_texts.append(doc)
        changed = np.zeros(n, bool)
        changed[todo] = True
        return pc.replace_with_mask(text, pa.array(changed), pa.array(new_texts, pa.string())), counts

    def process(self, table: pa.Table) -> pa.Table:
        self.ensure_setup()
        p: PiiParams = self.params
        placeholders = {**PLACEHOLDERS, **p.placeholders}
        n = table.num_rows
        original = table.column(schema.TEXT).combine_chunks()
        text, counts = self._redacted(original, placeholders)
        out = table
        if p.mode == "redact" and text is not original:
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


def _to_original(pos: int, done: list[tuple[int, int, int]]) -> int:
    """A position in the text after the replacements ``done`` (sorted; spans never overlap a
    placeholder) as the position in the text before them."""
    shift = 0
    for start, end, width in done:
        if start + shift >= pos:
            break
        shift += width - (end - start)
    return pos - shift


def masker(resolved: list[dict[str, Any]]) -> Callable[[str | None], str | None] | None:
    """For a run whose stages (the manifest's ``stages_resolved``) include ``pii_v1``, a function that
    masks a text as that stage's first use redacts it, whatever its mode; ``None`` without one. What
    shows rows of a finished run (the report's examples, ``curate inspect``) passes them through it, so a
    ``mode: reject`` run's raw values stay in ``rejected/`` only."""
    spec = next((s for s in resolved if s.get("name") == Pii.name), None)
    if spec is None:
        return None
    params = {k: v for k, v in (spec.get("params") or {}).items() if k in PiiParams.__dataclass_fields__}
    stage = Pii(PiiParams(**{**params, "mode": "redact"}), label=spec.get("label"))

    def mask(text: str | None) -> str | None:
        if not text:
            return text
        return stage.scrub(pa.table({schema.TEXT: [text]})).column(schema.TEXT)[0].as_py()

    return mask

"""Labelled sets for semantic dedup: the calibration set (human abstracts and their polished versions)
and a text-reuse set built from Wikipedia (originals, their cut / light / heavy revisions, and other
text on the same topic), mixed with web pages.

Calibration (``hppt``): ``neardup/hppt_polished_abstracts``: an ACL abstract (``fake`` 0) and its
ChatGPT/LLaMA-polished version (``fake`` 1) share ``url``: a positive pair. Different human abstracts
(all NLP papers) are the negatives: same topic, different documents.

Reuse check (never used to set a threshold): ``clean/wikipedia`` articles of at least 1,200 words.
Per article: the original is its first ~220 words (whole sentences after the title); a *cut* is a
contiguous half of the original's sentences; a *light* revision swaps the ``SYNONYMS`` table's words
(about one in twelve), drops one sentence in eight and moves one sentence; a *heavy* revision swaps the
same words, drops a fifth of the sentences and a fifth of the remaining words at random, shuffles the
sentences and adds a connective to each; *same topic* is ~220 words from the second half of the same
article (another section: the same subject in other sentences, as an independent answer to the same
question is).
"""

from __future__ import annotations

import gzip
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

CONNECTIVES = ("Moreover,", "In fact,", "Notably,", "Indeed,", "As a result,", "In short,", "Also,")
SENT = re.compile(r"(?<=[.!?])\s+")
SYNONYMS = dict(
    re.findall(
        r"(\w+):(\w+)",
        "said:stated says:states big:large small:little large:big help:assist helped:assisted "
        "start:begin started:began begin:start show:display showed:displayed shows:displays "
        "buy:purchase bought:purchased use:employ used:employed using:employing make:create made:created "
        "get:obtain got:obtained need:require needs:requires needed:required important:significant "
        "many:numerous often:frequently quickly:rapidly fast:rapid also:additionally but:however "
        "about:approximately people:individuals children:kids car:vehicle cars:vehicles house:home "
        "job:position jobs:positions company:firm companies:firms city:town country:nation "
        "government:administration police:officers officials:authorities home:residence "
        "begin:commence end:finish ended:finished try:attempt tried:attempted want:wish wanted:wished "
        "think:believe thought:believed know:understand knew:understood see:observe saw:observed "
        "find:discover found:discovered give:provide gave:provided tell:inform told:informed "
        "ask:request asked:requested look:appear looked:appeared work:labor worked:labored "
        "new:novel old:aged good:fine great:excellent best:finest bad:poor high:elevated "
        "low:reduced long:lengthy short:brief hard:difficult easy:simple different:distinct "
        "year:twelvemonth years:years week:sevennight month:period day:date days:dates "
        "problem:issue problems:issues question:query questions:queries idea:notion ideas:notions "
        "change:alter changed:altered keep:retain kept:retained allow:permit allowed:permitted "
        "include:comprise includes:comprises included:comprised increase:rise increased:rose "
        "part:portion place:location area:region areas:regions group:team groups:teams "
        "money:funds plan:scheme plans:schemes report:account reported:recounted "
        "buy:acquire sell:vend sold:vended win:triumph won:triumphed lose:forfeit lost:forfeited "
        "almost:nearly enough:sufficient maybe:perhaps really:truly very:highly just:merely "
        "around:roughly before:prior after:following during:throughout while:whilst "
        "today:currently recently:lately later:subsequently student:pupil students:pupils "
        "school:academy team:squad game:match games:matches season:campaign player:athlete "
        "players:athletes president:leader state:province states:provinces world:globe",
    )
)


def load(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def hppt_pairs(corpora: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """(human, polished) pairs, and every distinct human abstract."""
    by: dict[str, dict[int, str]] = {}
    for d in load(corpora / "neardup/hppt_polished_abstracts.jsonl.gz"):
        by.setdefault(d["url"], {})[d["fake"]] = d["text"]
    pairs = [(v[0], v[1]) for v in by.values() if 0 in v and 1 in v]
    humans = list(dict.fromkeys(v[0] for v in by.values() if 0 in v))
    return pairs, humans


def _window(sentences: list[str], start: int, words: int) -> str:
    out: list[str] = []
    for s in sentences[start:]:
        out.append(s)
        if sum(len(x.split()) for x in out) >= words:
            break
    return " ".join(out)


def _swap(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        s = SYNONYMS.get(m.group().lower())
        return m.group() if s is None else (s.capitalize() if m.group()[0].isupper() else s)

    return re.sub(r"[A-Za-z]+", one, text)


def light(text: str, rng: random.Random) -> str:
    sentences = SENT.split(_swap(text))
    sentences = [s for i, s in enumerate(sentences) if len(sentences) < 4 or i % 8 != 3]
    if len(sentences) > 2:
        sentences.insert(rng.randrange(len(sentences)), sentences.pop(rng.randrange(len(sentences))))
    return " ".join(sentences)


def heavy(text: str, rng: random.Random) -> str:
    sentences = [s for s in SENT.split(_swap(text)) if rng.random() >= 0.2] or [text]
    rng.shuffle(sentences)
    out = []
    for s in sentences:
        words = [w for w in s.split() if rng.random() >= 0.2] or s.split()[:1]
        out.append(f"{rng.choice(CONNECTIVES)} {' '.join(words)}")
    return " ".join(out)


def cut(text: str, rng: random.Random) -> str:
    sentences = SENT.split(text)
    half = max(1, len(sentences) // 2)
    start = rng.randrange(len(sentences) - half + 1)
    return " ".join(sentences[start : start + half])


@dataclass
class ReuseSet:
    """Texts in input order with a label each: ``web``, ``original``, ``cut``, ``light``, ``heavy`` or
    ``topic``; ``group`` is the article (-1 for web pages)."""

    texts: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)

    def add(self, text: str, kind: str, group: int) -> None:
        self.texts.append(text)
        self.kinds.append(kind)
        self.groups.append(group)


def reuse_set(corpora: Path, *, articles: int, web: int, seed: int = 0) -> ReuseSet:
    """Web pages first, then per article: original, its three revisions, the same-topic text."""
    rng = random.Random(seed)
    pages = [
        d["text"] for f in ("web/c4_en", "web/news", "web/webtext") for d in load(corpora / f"{f}.jsonl.gz")
    ]
    pages = [t for t in dict.fromkeys(pages) if len(t.split()) >= 40]
    rng.shuffle(pages)
    wiki = [d["text"] for d in load(corpora / "clean/wikipedia.jsonl.gz") if len(d["text"].split()) >= 1200]
    rng.shuffle(wiki)
    out = ReuseSet()
    for t in pages[:web]:
        out.add(t, "web", -1)
    for g, article in enumerate(wiki[:articles]):
        body = article.split("\n\n", 1)[-1]
        sentences = [s for s in SENT.split(" ".join(body.split())) if len(s.split()) >= 4]
        original = _window(sentences, 0, 220)
        later = _window(sentences, len(sentences) // 2, 220)
        out.add(original, "original", g)
        for kind, make in (("cut", cut), ("light", light), ("heavy", heavy)):
            out.add(make(original, rng), kind, g)
        out.add(later, "topic", g)
    return out

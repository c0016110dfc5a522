"""URL blocklists and banned words, as datatrove 0.10's ``URLFilter`` with its integrated lists.

The lists are the ones datatrove ships (``datatrove/assets``: the UT1-derived domain and URL blocklists in
``url_filterblacklistsv0_3_0.tar.gz``, and ``banned_words``, ``soft_banned_words``, ``banned_subwords``);
we read them in place (no extraction, no download), and keep the hashes of the archive's lists in
cache files (``CURATE_CACHE``, default ``~/.cache/curate``: :func:`integrated_hashes`). Domains come from
``tldextract`` with its bundled public-suffix snapshot (no network). The 4.5 million blocked domains are
held as sorted 64-bit hashes. Documents without a ``url`` value pass. Columns (0/1 unless said):
``domain``, ``subdomain``, ``url``, ``hard_blacklisted``, ``soft_words`` (count of soft-banned words) and
``blacklisted_subword``; the reference rules check them in datatrove's order with its reason names.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import tarfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from curate.core.registry import STAGES
from curate.core.rules import Rule
from curate.core.stage import Scorer
from curate.io.files import atomic_save_npy

log = logging.getLogger(__name__)
ARCHIVE = "url_filterblacklistsv0_3_0.tar.gz"
_FIELDS = ["domain", "subdomain", "url", "hard_blacklisted", "soft_words", "blacklisted_subword"]
_SEED = 11


def datatrove_assets() -> str:
    spec = importlib.util.find_spec("datatrove")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("url_filter_v1 needs the datatrove package (it ships the blocklists)")
    return os.path.join(spec.submodule_search_locations[0], "assets")


def _normalize(s: pl.Expr) -> pl.Expr:
    return s.str.replace_all(r"[^a-zA-Z0-9]+", "").str.to_lowercase()


_NON_ALNUM = re.compile(r"[^a-zA-Z0-9]+")


def _norm_word(word: str) -> str:
    """datatrove's ``normalize``: drop non-alphanumerics, lower-case."""
    return _NON_ALNUM.sub("", word).lower()


def _word_list(path: str) -> list[str]:
    with open(path) as f:
        return [_norm_word(x) for x in f if x[0] != "#"]


def _hashes(values: pl.Series) -> np.ndarray:
    return values.hash(seed=_SEED).to_numpy()


def _sorted_hashes(values: pl.Series) -> np.ndarray:
    return values.hash(seed=_SEED).sort().to_numpy()


def _read_archive(path: str) -> dict[str, pl.Series]:
    """The ``domains`` and ``urls`` lists of datatrove's archive: stripped lines, ``#`` comments dropped.

    One streaming pass ("r|gz"; "r:gz" lists the members first and then seeks back, which decompresses
    the 124 MB archive twice), lines split in polars rather than as Python strings."""
    lists = {"domains": pl.Series([], dtype=pl.String), "urls": pl.Series([], dtype=pl.String)}
    with tarfile.open(path, "r|gz") as tar:
        for member in tar:
            f = tar.extractfile(member) if member.name in lists else None
            if f is None:
                continue
            s = pl.Series([f.read()], dtype=pl.Binary).cast(pl.String).str.split("\n").explode()
            s = s.str.strip_chars()
            lists[member.name] = pl.concat([lists[member.name], s.filter(~s.str.starts_with("#"))])
    return lists


def cache_dir() -> str:
    """This node's cache, as ``curate.io.stage.node_cache``: ``CURATE_CACHE``, else ``~/.cache/curate``."""
    return os.environ.get("CURATE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "curate")


def integrated_hashes(archive: str) -> dict[str, np.ndarray]:
    """Sorted hashes of the archive's ``domains`` and ``urls``, cached on local disk.

    Reading the archive costs ~1.3 CPU-s per process (and per Ray worker); the cache, one ``.npy`` file per
    list, is mapped read-only, not read: ~0.001 CPU-s, where reading the 36 MB cost ~0.26, and the pages are
    shared by every process of the node (a lookup touches a few). Its name holds the archive's path, size
    and modification time, the polars version (whose string hash we store) and the seed, so a changed
    archive or hash function is read afresh; a cache that cannot be read or written is ignored."""
    st = os.stat(archive)
    tag = f"{os.path.abspath(archive)}|{st.st_size}|{st.st_mtime_ns}|polars {pl.__version__}|seed {_SEED}"
    base = os.path.join(cache_dir(), f"url-blocklists-{hashlib.sha256(tag.encode()).hexdigest()[:20]}")
    try:
        return {name: np.load(f"{base}.{name}.npy", mmap_mode="r") for name in ("domains", "urls")}
    except (OSError, ValueError):
        pass
    out = {name: _sorted_hashes(values) for name, values in _read_archive(archive).items()}
    try:
        os.makedirs(os.path.dirname(base), exist_ok=True)
        for name, values in out.items():
            atomic_save_npy(f"{base}.{name}.npy", values)
    except OSError as e:
        log.info("url_filter_v1: blocklist cache not written (%s): %s", base, e)
    return out


def _merged(extra: np.ndarray, listed: np.ndarray) -> np.ndarray:
    """Sorted hashes of both lists: the array sorting the hashes of all their entries gives."""
    return np.sort(np.concatenate([extra, listed])) if len(extra) else listed


@dataclass
class UrlFilterParams:
    """Attributes:
    soft_word_threshold: soft-banned words in a URL that reject it.
    extra_domains: more blocked (registered or full) domains.
    extra_urls: more blocked URLs (exact match).
    banned_words, soft_banned_words, banned_subwords: added to datatrove's lists.
    use_integrated_lists: use datatrove's shipped lists.
    """

    soft_word_threshold: int = 2
    extra_domains: list[str] = field(default_factory=list)
    extra_urls: list[str] = field(default_factory=list)
    banned_words: list[str] = field(default_factory=list)
    soft_banned_words: list[str] = field(default_factory=list)
    banned_subwords: list[str] = field(default_factory=list)
    use_integrated_lists: bool = True


@STAGES.add("url_filter_v1")
class UrlFilter(Scorer):
    """Rejects documents whose URL is on a blocklist or carries banned words."""

    Params = UrlFilterParams
    _unpicklable = ("_domains", "_urls", "_extract")

    def setup(self) -> None:
        import tldextract

        p: UrlFilterParams = self.params
        domains = pl.Series([d.strip() for d in p.extra_domains], dtype=pl.String)
        urls = pl.Series([u.strip() for u in p.extra_urls], dtype=pl.String)
        banned, soft, sub = list(p.banned_words), list(p.soft_banned_words), list(p.banned_subwords)
        self._domains, self._urls = _sorted_hashes(domains), _sorted_hashes(urls)
        if p.use_integrated_lists:
            assets = datatrove_assets()
            listed = integrated_hashes(os.path.join(assets, ARCHIVE))
            self._domains = _merged(self._domains, listed["domains"])
            self._urls = _merged(self._urls, listed["urls"])
            banned += _word_list(os.path.join(assets, "banned_words.txt"))
            soft += _word_list(os.path.join(assets, "soft_banned_words.txt"))
            sub += _word_list(os.path.join(assets, "banned_subwords.txt"))
        self._banned = sorted({_norm_word(w) for w in banned})
        self._soft = sorted({_norm_word(w) for w in soft})
        self._sub = sorted({_norm_word(w) for w in sub})
        self._extract: Any = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    def _in(self, values: pl.Series, sorted_hashes: np.ndarray) -> np.ndarray:
        h = _hashes(values)
        i = np.searchsorted(sorted_hashes, h).clip(0, max(len(sorted_hashes) - 1, 0))
        return (sorted_hashes[i] == h) if len(sorted_hashes) else np.zeros(len(h), dtype=bool)

    def output_fields(self) -> list[str]:
        return list(_FIELDS)

    def score(self, table: pa.Table) -> dict[str, pa.Array]:
        self.ensure_setup()
        n = table.num_rows
        if "url" not in table.column_names:
            return {name: pa.array(np.zeros(n, dtype=np.int64)) for name in _FIELDS}
        url = pl.Series("url", table.column("url").combine_chunks()).cast(pl.String)
        has = url.is_not_null() & (url.str.len_bytes() > 0)
        uniq = url.filter(has).unique().to_list()
        parts = {u: self._extract(u) for u in uniq}
        reg = url.map_elements(
            lambda u: parts[u].registered_domain if u in parts else None,
            return_dtype=pl.String,
            skip_nulls=True,
        )
        fqdn = url.map_elements(
            lambda u: parts[u].fqdn if u in parts else None, return_dtype=pl.String, skip_nulls=True
        )
        # set(re.split("[^a-zA-Z0-9]+", url)): words keep their case; "" appears when the URL starts or
        # ends with a separator (it matters only if a list holds "").
        url_words = pl.select(pl.lit(url).str.replace_all(r"[^a-zA-Z0-9]+", " ").str.split(" ")).to_series()
        checks = {
            "domain": self._in(reg.fill_null("\x00none"), self._domains),
            "subdomain": self._in(fqdn.fill_null("\x00none"), self._domains),
            "url": self._in(url.fill_null("\x00none"), self._urls),
            "hard_blacklisted": pl.select(
                pl.lit(url_words)
                .list.eval(pl.element().is_in(pl.Series(self._banned, dtype=pl.String).implode()))
                .list.any()
            )
            .to_series()
            .fill_null(False)
            .to_numpy(),
            "soft_words": pl.select(
                pl.lit(url_words)
                .list.eval(pl.element().is_in(pl.Series(self._soft, dtype=pl.String).implode()))
                .list.sum()
            )
            .to_series()
            .fill_null(0)
            .to_numpy(),
            "blacklisted_subword": pl.select(_normalize(pl.lit(url)).str.contains_any(self._sub))
            .to_series()
            .fill_null(False)
            .to_numpy()
            if self._sub
            else np.zeros(n, dtype=bool),
        }
        has_np = has.fill_null(False).to_numpy()
        return {name: pa.array((np.asarray(v) * has_np).astype(np.int64)) for name, v in checks.items()}

    def reference_rules(self) -> list[Rule]:
        """datatrove's checks in its order, with its reason names."""
        c = self.label
        return [
            Rule(column=f"{c}.domain", max=0, reason="domain"),
            Rule(column=f"{c}.subdomain", max=0, reason="subdomain"),
            Rule(column=f"{c}.url", max=0, reason="url"),
            Rule(column=f"{c}.hard_blacklisted", max=0, reason="hard_blacklisted"),
            Rule(
                column=f"{c}.soft_words", max=self.params.soft_word_threshold - 1, reason="soft_blacklisted"
            ),
            Rule(column=f"{c}.blacklisted_subword", max=0, reason="blacklisted_subword"),
        ]

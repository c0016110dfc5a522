"""fastText supervised prediction (``lid.176.ftz``) read from the model file and computed in numpy.

fastText's ``predict`` walks every word of every document in C++: the word's id, then each char n-gram
of ``<word>`` hashed (FNV-1a over UTF-8 bytes, bytes sign-extended as ``int8``) into ``bucket`` and
mapped through the quantized model's pruning table, each row decoded from its product-quantizer codes
and added to the document's hidden vector; the average goes through the hierarchical softmax. On web
text that is the largest CPU cost of the web recipe (~14 of ~48 CPU-s). Documents repeat words
(11.4M words, 645k distinct in the 60,909 web documents), so here each *distinct* word of a batch is
hashed once, vectorised over all of them, and a document's hidden vector is the sum of its words'
sums.

Same maths, other rounding: fastText accumulates in float32 in word order, this module in float64
(exact sums, then one rounding), so a score can differ from fastText's by a few float32 ulps (measured: at
most 1.6e-5 on 64,999 web, multilingual, Python-docs and Wikipedia documents, with no label and no
keep/drop decision different; ``benchmarks/lid_parity.py``). Tokenization is fastText's: words split on ``' ' \\n \\r \\t \\v \\f \\0`` only (not
on other Unicode spaces), an end-of-line token ``</s>`` appended, a literal ``</s>`` ends the line,
``__label__`` tokens ignored.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from itertools import repeat

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

FASTTEXT_MAGIC = 793712314
EOS = "</s>"
LABEL_PREFIX = "__label__"
LOSS_HS = 1  # fastText: enum class loss_name { hs = 1, ns, softmax, ova }
MODEL_SUP = 3  # enum class model_name { cbow = 1, sg, sup }
FNV_OFFSET = np.uint32(2166136261)
FNV_PRIME = np.uint32(16777619)
CACHE_WORDS = 400_000
SEPARATORS = r"[\r\t\x0b\x0c\x00]"  # besides " " and "\n", which the caller's text has as " "


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        out = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return out

    def array(self, dtype: str, count: int) -> np.ndarray:
        arr = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.pos += arr.nbytes
        return arr

    def cstring(self) -> bytes:
        end = self.data.index(b"\0", self.pos)
        s = self.data[self.pos : end]
        self.pos = end + 1
        return s


@dataclass
class FastTextModel:
    """The parts of a supervised fastText model that prediction reads."""

    minn: int
    maxn: int
    bucket: int
    nwords: int
    words: dict[str, int]  # word -> id (entries of type word)
    labels: list[str]
    label_counts: np.ndarray
    prune_keys: np.ndarray  # sorted n-gram buckets kept by quantization
    prune_vals: np.ndarray  # their rows, minus nwords
    pruned: bool  # False: every bucket has its row (an unpruned model)
    input: np.ndarray  # (rows, dim) float64, decoded
    output: np.ndarray  # (labels - 1, dim) float64: the internal nodes of the Huffman tree

    @classmethod
    def load(cls, path: str) -> FastTextModel:
        """Parse a fastText ``.bin`` / ``.ftz`` (format version 12) with a hierarchical-softmax head."""
        with open(path, "rb") as f:
            r = _Reader(f.read())
        magic, version = r.take("<ii")
        if magic != FASTTEXT_MAGIC or version != 12:
            raise ValueError(
                f"{path}: not a fastText model of format version 12 (magic {magic}, version {version})"
            )
        dim, _ws, _epoch, _min_count, _neg, word_ngrams, loss, model, bucket, minn, maxn, _lr_rate = r.take(
            "<12i"
        )
        r.take("<d")
        if loss != LOSS_HS or model != MODEL_SUP or word_ngrams > 1:
            raise ValueError(
                f"{path}: the numpy engine reads supervised models with hierarchical softmax and word n-grams 1 "
                f"(loss {loss}, model {model}, wordNgrams {word_ngrams}); use engine: fasttext"
            )
        size, nwords, nlabels = r.take("<iii")
        _ntokens, prune_size = r.take("<qq")
        words: dict[str, int] = {}
        labels: list[str] = []
        counts: list[int] = []
        for i in range(size):
            word = r.cstring().decode("utf-8", errors="surrogateescape")
            count, kind = r.take("<qb")
            if kind == 0:
                words[word] = i
            else:
                labels.append(word)
                counts.append(count)
        pairs = r.array("<i4", 2 * max(prune_size, 0)).reshape(-1, 2)
        order = np.argsort(pairs[:, 0], kind="stable")
        (quant,) = r.take("<?")
        input_rows = _read_matrix(r, quant, path)
        (qout,) = r.take("<?")
        output = _read_matrix(r, quant and qout, path)
        if len(labels) != nlabels or output.shape[0] != nlabels or input_rows.shape[1] != dim:
            raise ValueError(
                f"{path}: inconsistent sizes (labels {nlabels}, output {output.shape}, dim {dim})"
            )
        return cls(
            minn=minn, maxn=maxn, bucket=bucket, nwords=nwords, words=words, labels=labels,
            label_counts=np.array(counts, np.int64), prune_keys=pairs[order, 0].astype(np.int64),
            prune_vals=pairs[order, 1].astype(np.int64), pruned=prune_size >= 0,
            input=input_rows, output=output[: nlabels - 1],
        )  # fmt: skip


def _read_matrix(r: _Reader, quant: bool, path: str) -> np.ndarray:
    """A dense matrix, or a product-quantized one decoded row by row (each row: its sub-vectors' centroids)."""
    if not quant:
        m, n = r.take("<qq")
        return r.array("<f4", m * n).reshape(m, n).astype(np.float64)
    qnorm, m, n, codesize = r.take("<?qqi")
    codes = r.array("u1", codesize)
    dim, nsubq, dsub, lastdsub = r.take("<iiii")
    ksub = 256
    centroids = r.array("<f4", dim * ksub)
    norm = np.ones(m, np.float32)
    if qnorm:  # each row's norm quantized by a 1-d quantizer with 256 centroids
        norm_codes = r.array("u1", m)
        r.take("<iiii")
        norm = r.array("<f4", ksub)[norm_codes]
    codes = codes.reshape(m, nsubq)
    out = np.empty((m, n), np.float32)
    for q in range(nsubq):
        d = lastdsub if q == nsubq - 1 else dsub
        table = centroids[q * ksub * dsub : q * ksub * dsub + ksub * d].reshape(ksub, d)
        out[:, q * dsub : q * dsub + d] = table[codes[:, q]] * norm[:, None]  # float32, as fastText's addcode
    return out.astype(np.float64)


def huffman_tree(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """fastText's ``HierarchicalSoftmaxLoss::buildTree``: (left, right) child of each node; leaves are labels."""
    osz = len(counts)
    n = 2 * osz - 1
    count = np.full(n, 10**15, np.int64)
    count[:osz] = counts
    left = np.full(n, -1, np.int64)
    right = np.full(n, -1, np.int64)
    leaf, node = osz - 1, osz
    for i in range(osz, n):
        mini = [0, 0]
        for j in range(2):
            if leaf >= 0 and count[leaf] < count[node]:
                mini[j], leaf = leaf, leaf - 1
            else:
                mini[j], node = node, node + 1
        left[i], right[i] = mini
        count[i] = count[mini[0]] + count[mini[1]]
    return left, right


def path_matrices(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(internal node, label) = 1 where the label lies under the node's left (resp. right) child."""
    osz = (len(left) + 1) // 2
    on_left = np.zeros((max(osz - 1, 0), osz))
    on_right = np.zeros((max(osz - 1, 0), osz))
    # labels under each node, then each node's left/right subsets
    under: list[np.ndarray] = [np.array([i]) for i in range(osz)] + [np.zeros(0, np.int64)] * (osz - 1)
    for node in range(osz, 2 * osz - 1):  # children before parents: child ids are smaller
        under[node] = np.concatenate([under[left[node]], under[right[node]]])
        on_left[node - osz, under[left[node]]] = 1.0
        on_right[node - osz, under[right[node]]] = 1.0
    return on_left, on_right


class NumpyPredictor:
    """``predict`` of a fastText supervised model over a batch of one-line texts, vectorised."""

    def __init__(self, path: str) -> None:
        self.model = FastTextModel.load(path)
        m = self.model
        self.labels = m.labels
        self._left, self._right = huffman_tree(m.label_counts)
        self._on_left, self._on_right = path_matrices(self._left, self._right)
        self._cache_index: dict[str, int] = {}
        self._cache_sums = np.zeros((0, m.input.shape[1]), np.float64)
        self._cache_counts = np.zeros(0, np.int64)
        # bucket -> input row of the n-grams quantization kept (-1: dropped), one lookup per n-gram
        self._bucket_row = np.full(m.bucket if m.pruned else 0, -1, np.int32)
        self._bucket_row[m.prune_keys] = m.nwords + m.prune_vals

    def get_labels(self) -> list[str]:
        return list(self.labels)

    def log_probs(self, texts: pl.Series) -> tuple[np.ndarray, np.ndarray]:
        """Per text: the log-probability of every label (fastText's, with its ``log(x + 1e-5)``; ``-inf``
        where fastText's search prunes the label) and whether fastText predicts anything (a text of
        no known word or n-gram gets no prediction)."""
        hidden, n_ids = self._hidden(texts)
        m = self.model
        osz = len(self.labels)
        if osz == 1:
            leaf = np.zeros((len(hidden), 1), np.float64)
        else:
            # each label's log-probability: the sum over its path of log(sigmoid or 1 - sigmoid + 1e-5), as two
            # matrix products over the path memberships (fastText adds them root first, in float32)
            dots = (hidden @ m.output.T).astype(np.float32).astype(np.float64)
            f = (1.0 / (1.0 + np.exp(-dots))).astype(np.float32).astype(np.float64)
            leaf = np.log(1.0 - f + 1e-5) @ self._on_left + np.log(f + 1e-5) @ self._on_right
        leaf[leaf < np.log(1e-5)] = -np.inf  # fastText's dfs drops a branch below log(threshold + 1e-5)
        return leaf, n_ids > 0

    def _hidden(self, texts: pl.Series) -> tuple[np.ndarray, np.ndarray]:
        """The average input row of each text (fastText's ``computeHidden``) and its number of rows."""
        n_docs = len(texts)
        dim = self.model.input.shape[1]
        tokens = (
            pl.DataFrame({"t": texts.str.replace_all(SEPARATORS, " ") + " " + EOS})
            .with_row_index("doc")
            .select("doc", pl.col("t").str.split(" ").alias("w"))
            .explode("w")
            .filter(pl.col("w") != "")
        )
        doc = tokens["doc"].to_numpy().astype(np.int64)
        if texts.str.contains(EOS, literal=True).any():
            # A literal </s> ends fastText's line: keep each document's tokens up to its first </s>.
            is_eos = (tokens["w"] == EOS).to_numpy()
            eos_cum = np.cumsum(is_eos)
            starts = np.searchsorted(doc, np.arange(n_docs))
            before_doc = np.concatenate(([0], eos_cum))[starts]
            keep = (eos_cum - is_eos - before_doc[doc]) == 0
            tokens = tokens.filter(pl.Series(keep))
            doc = doc[keep]
        # one hashing pass: each token's index into the batch's distinct words
        encoded = pc.dictionary_encode(tokens["w"].to_arrow())
        if isinstance(encoded, pa.ChunkedArray):
            encoded = encoded.combine_chunks()
        u = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        sums, counts = self._cached_word_sums(encoded.dictionary.to_pylist())
        hidden = np.zeros((n_docs, dim), np.float64)
        n_ids = np.zeros(n_docs, np.int64)
        if len(u):
            first = np.flatnonzero(np.concatenate(([True], doc[1:] != doc[:-1])))
            # One dimension at a time: a 1-d gather and a 1-d reduceat add the same numbers in the same order
            # as a reduceat over the (tokens, dim) rows, at about a quarter of its cost (no strided rows).
            sums_t = np.ascontiguousarray(sums.T)
            rows = doc[first]
            for j in range(dim):
                hidden[rows, j] = np.add.reduceat(sums_t[j][u], first)
            n_ids[rows] = np.add.reduceat(counts[u], first)
        with np.errstate(invalid="ignore", divide="ignore"):
            hidden = np.where(n_ids[:, None] > 0, hidden / n_ids[:, None], 0.0)
        return hidden.astype(np.float32).astype(np.float64), n_ids

    def _cached_word_sums(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_word_sums` through a per-process cache of the words already seen (at most ``CACHE_WORDS``:
        a full cache starts afresh, so memory stays bounded: ~140 bytes a word with 16 dimensions)."""
        index = self._cache_index
        rows = np.fromiter(map(index.get, words, repeat(-1)), np.int64, len(words))
        new = np.flatnonzero(rows < 0)
        if len(new):
            if len(index) + len(new) > CACHE_WORDS:
                index.clear()
                return self._cached_word_sums(words) if len(words) <= CACHE_WORDS else self._word_sums(words)
            new_words = [words[i] for i in new]
            sums, counts = self._word_sums(new_words)
            start = len(index)
            index.update(zip(new_words, range(start, start + len(new_words)), strict=True))
            if len(index) > len(self._cache_counts):  # grow by doubling, not per batch
                cap = min(max(2 * len(self._cache_counts), len(index)), CACHE_WORDS)
                self._cache_sums = np.resize(self._cache_sums, (cap, self._cache_sums.shape[1]))
                self._cache_counts = np.resize(self._cache_counts, cap)
            self._cache_sums[start : len(index)] = sums
            self._cache_counts[start : len(index)] = counts
            rows[new] = np.arange(start, start + len(new_words))
        return self._cache_sums[rows], self._cache_counts[rows]

    def _word_sums(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """For each distinct word: the sum of its input rows (word id, then kept char n-grams) and their count."""
        m = self.model
        dim = m.input.shape[1]
        n = len(words)
        sums = np.zeros((n, dim), np.float64)
        counts = np.zeros(n, np.int64)
        if not n:
            return sums, counts
        wid = np.fromiter(map(m.words.get, words, repeat(-1)), np.int64, n)
        label = np.fromiter((w.startswith(LABEL_PREFIX) for w in words), bool, n)
        has_id = (wid >= 0) & ~label
        sums[has_id] = m.input[wid[has_id]]
        counts[has_id] = 1
        # EOS (in the vocabulary or not) has no n-grams; nor has a label token.
        gram = ~label & np.fromiter((w != EOS for w in words), bool, n)
        idx = np.flatnonzero(gram)
        if len(idx) and m.maxn > 0:
            owner, ids = self._ngram_rows([words[i] for i in idx])
            owner = idx[owner]
            counts += np.bincount(owner, minlength=n)
            for j in range(dim):
                sums[:, j] += np.bincount(owner, weights=m.input[ids, j], minlength=n)
        return sums, counts

    def _ngram_rows(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(word index, input row) of every kept char n-gram of ``<word>``, fastText's ``computeSubwords``.

        Grown one char at a time over the n-grams still inside their word (compacted arrays, so a length
        costs what is left of it): each takes the bytes of its next char into its FNV-1a hash, all first
        bytes at once and the rest only for multi-byte chars."""
        m = self.model
        encoded = [("<" + w + ">").encode("utf-8", errors="surrogateescape") for w in words]
        lens = np.fromiter((len(b) for b in encoded), np.int64, len(encoded))
        buf = np.frombuffer(b"".join(encoded), np.uint8)
        word_of_byte = np.repeat(np.arange(len(words)), lens)
        char_start = np.flatnonzero((buf & 0xC0) != 0x80)
        n_chars = len(char_start)
        char_word = word_of_byte[char_start]
        char_len = np.diff(np.append(char_start, len(buf)))  # bytes of each char
        # sign-extended bytes, as fastText's uint32_t(int8_t(c))
        sbyte = buf.view(np.int8).astype(np.int32).view(np.uint32)
        first = np.arange(n_chars)  # the n-grams alive at this length: their first char, their hash so far
        h = np.full(n_chars, FNV_OFFSET, np.uint32)
        owners, rows = [], []
        for k in range(1, m.maxn + 1):
            last = first + (k - 1)
            if k > 1:  # an n-gram grows by one char if its word has one more
                ok = last < n_chars
                ok[ok] = char_word[last[ok]] == char_word[first[ok]]
                first, h, last = first[ok], h[ok], last[ok]
            if not len(first):
                break
            start, clen = char_start[last], char_len[last]
            h = (h ^ sbyte[start]) * FNV_PRIME
            more = np.flatnonzero(clen > 1)
            for b in range(1, 4):  # a UTF-8 char is 1-4 bytes
                if not len(more):
                    break
                h[more] = (h[more] ^ sbyte[start[more] + b]) * FNV_PRIME
                more = more[clen[more] > b + 1]
            if k < m.minn:
                continue
            sel, hk = first, h
            if k == 1:  # fastText skips 1-grams that are the BOW or the EOW character
                word = char_word[first]
                bow = np.concatenate(([True], char_word[1:] != char_word[:-1]))[first]
                nxt = first + 1
                eow = (nxt >= n_chars) | (char_word[np.minimum(nxt, n_chars - 1)] != word)
                sel, hk = first[~bow & ~eow], h[~bow & ~eow]
            bucket_id = (hk % np.uint32(m.bucket)).astype(np.int64)
            if m.pruned:
                row = self._bucket_row[bucket_id]
                found = row >= 0
                owners.append(char_word[sel[found]])
                rows.append(row[found].astype(np.int64))
            else:
                owners.append(char_word[sel])
                rows.append(m.nwords + bucket_id)
        if not owners:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(owners), np.concatenate(rows)

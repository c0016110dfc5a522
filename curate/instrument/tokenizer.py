"""The proxy runs' tokenizer: a byte-level BPE trained here with ``tokenizers``, or a ``tokenizer.json``.

Every recipe of a run is tokenized with the same tokenizer, saved as ``tokenizer.json`` inside the run, so
curves are comparable. Nothing is downloaded. Byte-level BPE means every UTF-8 byte sequence encodes
losslessly, which is what bits-per-byte needs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from curate.io.files import atomic_path

log = logging.getLogger(__name__)

EOS = "<|endoftext|>"


@lru_cache(maxsize=1)
def _unicode_to_byte() -> dict[str, int]:
    # GPT-2's reversible byte <-> printable-character table, inverted (byte-level BPE vocab strings).
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=True)}


class ProxyTokenizer:
    """A ``tokenizers.Tokenizer`` plus what training needs: the end-of-text id, the vocab size, the token
    dtype for shards, and each token's length in UTF-8 bytes (0 for special tokens)."""

    def __init__(self, tok: object) -> None:
        from tokenizers import Tokenizer

        assert isinstance(tok, Tokenizer)
        self.tok = tok
        self.vocab_size = tok.get_vocab_size(with_added_tokens=True)
        eos = tok.token_to_id(EOS)
        if eos is None:
            for cand in ("</s>", "<eos>", "<|end_of_text|>"):
                eos = tok.token_to_id(cand)
                if eos is not None:
                    break
        if eos is None:
            raise ValueError(f"tokenizer has no end-of-text token ({EOS!r} or </s>)")
        self.eos_id = int(eos)
        self.dtype = np.uint16 if self.vocab_size <= 65536 else np.uint32

    @classmethod
    def load(cls, path: str | Path) -> ProxyTokenizer:
        """Load a ``tokenizer.json`` (e.g. one saved with a run, or ../shared/corpora/tokenizers/*.json)."""
        from tokenizers import Tokenizer

        path = Path(path)
        if path.is_dir():
            path = path / "tokenizer.json"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no tokenizer.json there")
        return cls(Tokenizer.from_file(str(path)))

    def save(self, path: str | Path) -> Path:
        """Write ``tokenizer.json`` (into ``path`` when it is a folder); returns the file written."""
        path = Path(path)
        if path.suffix != ".json":
            path.mkdir(parents=True, exist_ok=True)
            path = path / "tokenizer.json"
        with atomic_path(path) as tmp:
            self.tok.save(str(tmp))
        return path

    def encode_batch(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token ids of each text (no special tokens added)."""
        encs = self.tok.encode_batch(list(texts), add_special_tokens=False)
        return [np.asarray(e.ids, dtype=self.dtype) for e in encs]

    def decode(self, ids: Sequence[int]) -> str:
        return self.tok.decode(list(map(int, ids)), skip_special_tokens=False)

    @property
    def token_bytes(self) -> np.ndarray:
        """UTF-8 length of each token id (0 for special tokens); for byte-level vocabularies exact."""
        if getattr(self, "_token_bytes", None) is None:
            table = _unicode_to_byte()
            special = {t.content for t in self.tok.get_added_tokens_decoder().values() if t.special}
            out = np.zeros(self.vocab_size, dtype=np.int32)
            for token, idx in self.tok.get_vocab(with_added_tokens=True).items():
                if token in special or idx >= self.vocab_size:
                    continue
                if all(ch in table for ch in token):
                    out[idx] = len(token)
                else:  # not a byte-level symbol: measure its decoded text
                    out[idx] = len(self.tok.decode([idx]).encode("utf-8"))
            self._token_bytes = out
        return self._token_bytes


def train_bpe(texts: Iterable[str], *, vocab_size: int = 8192, min_frequency: int = 2) -> ProxyTokenizer:
    """Train a GPT-2-style byte-level BPE on ``texts`` with ``<|endoftext|>`` as its only special token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    log.info("trained a byte-level BPE with %d tokens", tok.get_vocab_size())
    return ProxyTokenizer(tok)

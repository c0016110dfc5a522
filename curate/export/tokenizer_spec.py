"""Which tokenizer a token export uses: the one the user named, never one picked for them.

``export.tokenizer`` (``--tokenizer``) is a Hugging Face ``tokenizer.json`` or a name
(:mod:`curate.io.named_tokenizers`: ``gpt2``; ``proxy`` for the run's own proxy tokenizer, which a
trainer rarely wants, so the export says so). A file is a path or a URL, resolved once when the section
is parsed (:func:`curate.io.paths.locate`: the working directory, the pipeline's folder, the repository
root; an object store's URL as written), so the token counter and the export read the same file. The
export copies the file it used to ``export/tokenizer.json``: a trainer finds the tokenizer beside the
shards, and the manifest's sha256 is that file's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curate.core.errors import PhaseError
from curate.io import named_tokenizers, paths
from curate.io.storage import StorageError, is_remote, local_copy

# Tried in order when no EOS token is given: the usual end-of-document markers of BPE tokenizers.
EOS_CANDIDATES = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "[EOS]", "<|eos|>")
UINT16_VOCAB = 65536  # ids 0..65535 fit uint16
FILE = "tokenizer.json"  # the export's copy of the tokenizer it used
PROXY_ORIGIN = "the run's proxy tokenizer (proxy/tokenizer.json), fitted for the proxy runs: not a trainer's"


@dataclass(frozen=True)
class TokenizerSpec:
    """A resolved tokenizer: its name, where it came from, its file, checksum, vocabulary size and the
    EOS appended to every document.

    ``name`` is what the user gave (``gpt2``, ``proxy`` or the path); ``path`` is the file the
    workers load (the export's ``tokenizer.json``). ``token_dtype`` is the dtype of the flat (memmap)
    export and of the intermediate token files: uint16 when every id fits (a vocabulary of at most
    65,536), else uint32.
    """

    name: str
    origin: str
    path: str
    sha256: str
    vocab_size: int
    eos_token: str
    eos_id: int

    @property
    def token_dtype(self) -> np.dtype:
        return np.dtype(np.uint16) if self.vocab_size <= UINT16_VOCAB else np.dtype(np.uint32)

    @property
    def is_proxy(self) -> bool:
        return self.name == named_tokenizers.PROXY

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "origin": self.origin,
            "file": FILE,
            "sha256": self.sha256,
            "vocab_size": self.vocab_size,
            "eos_token": self.eos_token,
            "eos_id": self.eos_id,
            "dtype": self.token_dtype.name,
        }


def describe(tok: dict[str, object]) -> str:
    """One line for a terminal from a manifest's ``tokenizer`` record: name, vocabulary, EOS, checksum
    and, for the proxy's, that it is not a trainer's."""
    line = (
        f"{tok['name']} (vocab {tok['vocab_size']:,}, EOS {tok['eos_token']} = {tok['eos_id']}, "
        f"sha256 {str(tok['sha256'])[:12]}, saved as export/{tok.get('file', FILE)})"
    )
    return f"{line}; {PROXY_ORIGIN}" if tok["name"] == named_tokenizers.PROXY else line


def need_tokenizer_message(formats: list[str] | tuple[str, ...]) -> str:
    """The one line refusing a token export with no tokenizer named."""
    return (
        f"export: formats {', '.join(formats)} need the tokenizer your trainer uses: set export.tokenizer "
        "(--tokenizer on curate export) to a Hugging Face tokenizer.json or a name (gpt2: GPT-2's BPE, "
        "offline; proxy: this run's small proxy tokenizer), or export only parquet and/or hf_disk"
    )


def tokenizer_source(ref: str, *, proxy_file: Path) -> tuple[str, bytes]:
    """The origin and the ``tokenizer.json`` bytes of ``ref``: a name, a URL, or a path (as the options
    hold it: resolved when they were parsed; a relative path by the same rule, without a pipeline)."""
    if ref == named_tokenizers.PROXY:
        if not proxy_file.is_file():
            raise PhaseError(
                f"export.tokenizer: proxy names the run's proxy tokenizer, and the run has none at "
                f"{proxy_file} (no proxy phase ran); name another tokenizer (gpt2, or a tokenizer.json)"
            )
        return PROXY_ORIGIN, proxy_file.read_bytes()
    try:
        found = named_tokenizers.named(ref)
    except FileNotFoundError as e:
        raise PhaseError(str(e)) from None
    if found is not None:
        return found.origin, found.json_text.encode("utf-8")
    if is_remote(ref):
        try:
            return ref, Path(local_copy(ref)).read_bytes()
        except StorageError as e:
            raise PhaseError(f"export.tokenizer: {e}") from None
    if named_tokenizers.looks_like_name(ref):
        raise PhaseError(named_tokenizers.unknown_name_message(ref))
    try:
        p = Path(paths.locate(ref, key="export.tokenizer"))
    except paths.PathNotFound as e:
        raise PhaseError(
            f"{e}; give a Hugging Face tokenizer.json (--tokenizer PATH or URL) or a name "
            f"({', '.join(named_tokenizers.NAMES)})"
        ) from None
    return str(p), p.read_bytes()


def resolve_tokenizer(
    name: str, origin: str, data: bytes, *, eos_token: str | None = None, path: Path
) -> TokenizerSpec:
    """The spec of the ``tokenizer.json`` bytes ``data``, to be loaded from ``path``, with its EOS
    token (``eos_token``, else the first usual name it has)."""
    from tokenizers import Tokenizer

    try:
        tok = Tokenizer.from_str(data.decode("utf-8"))
    except Exception as e:  # the tokenizers library raises bare Exceptions on malformed JSON
        raise PhaseError(f"tokenizer {name}: not a Hugging Face tokenizer.json ({e})") from e
    names = (eos_token,) if eos_token else EOS_CANDIDATES
    for eos in names:
        eos_id = tok.token_to_id(eos)
        if eos_id is not None:
            return TokenizerSpec(
                name=name,
                origin=origin,
                path=str(path),
                sha256=hashlib.sha256(data).hexdigest(),
                vocab_size=tok.get_vocab_size(),
                eos_token=eos,
                eos_id=int(eos_id),
            )
    raise PhaseError(
        f"tokenizer {name}: has no EOS token among {', '.join(names)}; "
        "name the one to append with export.eos_token / --eos-token"
    )

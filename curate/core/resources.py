"""What one worker of a stage asks the engine for. A leaf module: the stage contract and the engine
both import it, and neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resources:
    """What one worker of a stage needs. ``num_gpus`` may be fractional (several workers share a GPU).

    There is no batch size here: the unit of work is a part (one input batch, ``input.batch_docs``
    documents), and a stage that must bound its memory per call (a language model) batches inside
    ``score`` by its own parameter (e.g. ``perplexity_v1``'s ``batch_size`` windows per forward pass).
    """

    num_cpus: float = 1.0
    num_gpus: float = 0.0

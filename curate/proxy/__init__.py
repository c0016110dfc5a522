"""Proxy training: tokenizer, token shards, model ladder, trainer, evaluation and data goodput."""

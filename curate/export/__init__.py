"""Training export: Parquet with a dataset card, Megatron indexed token shards, memmap shards."""

"""Global deduplication stages: exact, MinHash-LSH, repeated lines, eval decontamination."""

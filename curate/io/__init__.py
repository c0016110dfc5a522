"""Readers (sources), the demo-corpus source, and the Parquet writer."""

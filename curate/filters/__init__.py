"""Heuristic scorers and transforms, one module per family (each registers its stages)."""

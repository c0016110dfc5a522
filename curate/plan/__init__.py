"""Capacity planning: ``curate plan`` projects a pipeline's cost at a corpus size and cluster shape."""

"""Model-based scorers: fastText quality, proxy-LM perplexity, synthetic-text detectors."""

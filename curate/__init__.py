"""curate: turn raw text corpora into training data and measure the data goodput it buys."""

__version__ = "0.1.0"

"""Pure accounting over normalised records: outcomes, causes, summaries. No I/O."""

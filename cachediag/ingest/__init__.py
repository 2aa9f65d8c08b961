"""Input formats -> normalised request records and events (one module per format)."""

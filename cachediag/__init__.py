"""cachediag: where the money goes in long LLM agent sessions."""

__version__ = "0.1.0"

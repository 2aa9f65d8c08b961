"""The status line: one line (or one JSON object) per assistant message, fast.

``fast`` is the entry point and imports only the standard library; it loads ``track``
(transcript reader + ledger) only when a transcript has new bytes. Nothing here imports
click, rich, pydantic or price tables.
"""

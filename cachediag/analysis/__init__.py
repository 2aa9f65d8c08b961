"""Pure accounting over normalised records: outcomes, causes, summaries. No I/O.

The results made once per request or per stream (``LedgerEntry``, ``EntryCost``,
``PromptCache``, ``StreamAnalysis``...) are slotted dataclasses that nothing changes once
made, but they are not declared frozen: a frozen dataclass sets each field through
``object.__setattr__``, which makes its ``__init__`` several times as slow as a plain
one's, and builds its class more slowly at import. Both costs fall on every request and on
every start of the command.
"""

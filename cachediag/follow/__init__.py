"""Following growing transcripts: the one incremental reader of the status line and
``watch``, and (in ``source``) the file-system events that drive ``watch``."""

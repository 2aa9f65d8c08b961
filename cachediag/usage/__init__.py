"""ccusage's usage reports (daily, weekly, monthly, session, blocks) with the prompt cache
in every row: pure functions over per-request rows (``rows``), no I/O."""

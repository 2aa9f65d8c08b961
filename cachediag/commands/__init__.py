"""Command logic shared by the click commands (``cli/``) and the fast paths.

What a command does once its arguments are known lives here: time windows and zones,
the analyze run and its JSON lines, the audit inputs, capture joining, the ccusage-style
reports. No click: ``cli/`` parses options into these calls, and the fast entry
(``entry.py``, ``quick*.py``) does the same for argument lists it recognises without a parser.
"""

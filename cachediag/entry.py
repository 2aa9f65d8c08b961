"""Console entry point.

Kept free of heavy imports: the status line (run after every assistant message) is
dispatched from here before click, rich or pydantic are loaded.
"""

from __future__ import annotations

import sys

_CLI_ONLY = {"install", "-h", "--help"}
"""``statusline`` arguments that need the click command (help text, settings writer)."""


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["statusline"] and not _CLI_ONLY.intersection(args[1:]):
        from cachediag.statusline.fast import run

        sys.exit(run(args[1:]))
    from cachediag.cli import main as cli_main

    cli_main(prog_name="cachediag")


if __name__ == "__main__":  # pragma: no cover
    main()

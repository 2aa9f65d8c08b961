"""Console entry point.

Kept free of heavy imports: the status line (run after every assistant message) is
dispatched from here before click, rich or pydantic are loaded.
"""

from __future__ import annotations


def main() -> None:
    from cachediag.cli import main as cli_main

    cli_main(prog_name="cachediag")


if __name__ == "__main__":  # pragma: no cover
    main()

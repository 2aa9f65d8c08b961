"""Console entry point.

Kept free of heavy imports: the status line (run after every assistant message) is
dispatched from here before click, rich or pydantic are loaded, and so are
``analyze --json PATH...`` (``quick``) and ``audit --json PATH...`` (``quick_audit``)
when their arguments need no option parser.
"""

from __future__ import annotations

import sys

_HELP = {"-h", "--help"}


def main() -> None:
    args = sys.argv[1:]
    # Only ``statusline install|uninstall`` and the help text need click; the line must not.
    if (
        args[:1] == ["statusline"]
        and args[1:2] not in (["install"], ["uninstall"])
        and not _HELP & set(args[1:])
    ):
        from cachediag.statusline.fast import main as statusline

        statusline()
    if args[:1] == ["analyze"]:
        from cachediag.quick import main as quick

        quick(args)  # exits when it ran the command; returns when click must read args
    elif args[:1] == ["audit"]:
        from cachediag.quick_audit import main as quick_audit

        quick_audit(args)
    from cachediag.cli import main as cli_main

    cli_main(prog_name="cachediag")


if __name__ == "__main__":  # pragma: no cover
    main()

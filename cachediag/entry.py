"""Console entry point.

Kept free of heavy imports: the status line (run after every assistant message) is
dispatched from here before click, rich or pydantic are loaded, and so are
``analyze --json PATH...`` (``quick``), ``audit --json PATH...`` (``quick_audit``) and
the usage reports' ``REPORT --json [PATH...]`` (``commands.usage_quick``) when their
arguments need no option parser.
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
    elif args[:1] and args[0] in ("daily", "weekly", "monthly", "session", "blocks"):
        from cachediag.commands.usage_quick import main as quick_usage

        quick_usage(args)  # ``REPORT --json [PATH...]`` without click; else click below
    from cachediag.cli import main as cli_main

    cli_main(prog_name="cachediag")


if __name__ == "__main__":  # pragma: no cover
    main()

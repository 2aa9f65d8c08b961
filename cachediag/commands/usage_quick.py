"""``cachediag daily|weekly|monthly|session|blocks --json [PATH...]`` without click.

Scripts written for ccusage run ``daily --json`` over and over; loading click and the
usage commands' options is a tenth of such a run (measured: 21 ms of CPU of 160 with
nothing to read, of 254 on the corpus). So, once ``entry`` hands the arguments here
(``REPORTS``, as it does ``analyze`` to ``quick``), a report whose arguments are
only paths, ``-j/--json`` and ``-O/--offline`` (in any order) runs here as
``cli.usage`` runs it, from the same pieces (``commands.usage``): the same bytes, notes,
errors and exit status (``console.run_guarded``). Anything else (help, tables, another
option, stdin, an odd path) goes to click, which reads and checks it.

Before any of that, a run answered before over the same files prints that answer again
(``history.report_answers``), having loaded nothing but the answer's check: this module
imports the rest only once it has to read.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # the replay must not pay for typing, pathlib or the report code
    from cachediag.commands.usage import UsageOptions

FLAGS = {"-j": "json", "--json": "json", "-O": "offline", "--offline": "offline"}
"""The only options taken here; tests/test_usage_reports_quick.py holds them to the
click commands' declarations."""


def usage_args(args: list[str]) -> UsageOptions | None:
    """What ``REPORT ARGS...`` say when this path can run them; ``None`` otherwise."""
    from pathlib import Path

    from cachediag.commands.usage import REPORTS, UsageOptions
    from cachediag.quick import add_path, paths_click_takes

    if not args or args[0] not in REPORTS:
        return None
    paths: list[Path] = []
    as_json = False
    for arg in args[1:]:
        flag = FLAGS.get(arg)
        if flag == "json":
            as_json = True
        elif flag is None and not add_path(arg, paths):
            return None
    if not as_json or (paths and not paths_click_takes(paths)):
        return None
    if not paths and not _history_found():
        return None  # click says that none was found, with its usage line
    return UsageOptions(report=args[0], paths=tuple(paths), json=True)


def _history_found() -> bool:
    from cachediag.errors import CachediagError
    from cachediag.pipeline import default_paths

    try:
        default_paths(None)
    except CachediagError:
        return False
    return True


def main(args: list[str]) -> None:
    """Run ``cachediag ARGS`` here and exit when click is not needed for them; return
    (having done nothing) when it is."""
    from cachediag.history.report_answers import replay

    try:
        answered = replay(args)
    except (BrokenPipeError, KeyboardInterrupt) as exc:  # ended as a run that read ends
        from cachediag.console import run_guarded

        ended = exc
        sys.exit(run_guarded(lambda: _again(ended)))
    if answered:
        sys.exit(0)
    from cachediag.console import plain_streams, run_guarded

    options = usage_args(args) if plain_streams() else None
    if options is None:
        return
    sys.exit(run_guarded(lambda: _report(options, args)))


def _again(exc: BaseException) -> None:
    raise exc


def _report(options: UsageOptions, args: list[str]) -> None:
    from cachediag.commands.usage import usage_report
    from cachediag.console import echo
    from cachediag.history.report_answers import keeping

    def text() -> str:
        out = usage_report(options)
        assert isinstance(out, str)  # --json: text, never tables
        return out

    echo(keeping(args, options, text))

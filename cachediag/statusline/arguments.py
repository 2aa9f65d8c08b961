"""What one status line run was asked for: its arguments, the environment's budget and
width, and the terminal's width and colours. Standard library only: the warm path
imports it.
"""

from __future__ import annotations

import os

from cachediag.commands.options import BUDGET, NOW, WIDTH, Option
from cachediag.statusline import render

USAGE = (
    "usage: cachediag statusline [--json] [--format TEMPLATE] [--preset full|compact|cache] "
    "[--color|--no-color] [--now EPOCH] [--budget SECONDS] [--width COLUMNS] [--check]"
)
BUDGET_S = 1.0
"""Default time budget of one run (``--budget``, ``CACHEDIAG_STATUSLINE_BUDGET``)."""


class Options:
    __slots__ = ("as_json", "budget_s", "color", "custom", "fmt", "now", "width")

    def __init__(self) -> None:
        self.as_json = False
        self.fmt = render.DEFAULT_FORMAT
        self.custom = False
        """A ``--format`` of the user's own: kept whole when no width is known."""
        self.color: bool | None = None
        self.now: float | None = None
        self.budget_s = BUDGET_S
        self.width: int | None = None


def _seconds(name: str, value: str, option: Option) -> float:
    """``value`` as a number in the range of ``option`` (commands.options: click's too)."""
    try:
        number = float(value)
    except ValueError:
        raise render.UsageError(f"{name} must be a number, not {value[:40]!r}") from None
    if not option.holds(number):  # NaN fails this too: each option here has a range
        raise render.UsageError(f"{name} must be between {option.low:g} and {option.high:g}")
    return number


def parse_args(args: list[str]) -> Options:
    opts = Options()
    configured = os.environ.get("CACHEDIAG_STATUSLINE_BUDGET", "").strip()
    if configured:
        opts.budget_s = _seconds("CACHEDIAG_STATUSLINE_BUDGET", configured, BUDGET)
    configured = os.environ.get("CACHEDIAG_STATUSLINE_WIDTH", "").strip()
    if configured:
        opts.width = int(_seconds("CACHEDIAG_STATUSLINE_WIDTH", configured, WIDTH))
    it = iter(args)
    for arg in it:
        name, eq, value = arg.partition("=")
        if name in ("--format", "--preset", "--now", "--budget", "--width") and not eq:
            following = next(it, None)
            if following is None:
                raise render.UsageError(f"{name} needs a value")
            value = following
        if name == "--json" and not eq:
            opts.as_json = True
        elif name == "--check" and not eq:
            pass  # ``run`` reads it first: a report is wanted even when the rest is wrong
        elif name in ("--color", "--no-color") and not eq:
            opts.color = name == "--color"
        elif name == "--format":
            render.parse_format(value)  # a bad template is reported, not half-rendered
            opts.fmt, opts.custom = value, True
        elif name == "--preset":
            if value not in render.PRESETS:
                known = ", ".join(render.PRESETS)
                raise render.UsageError(f"--preset: {value[:40]!r} is not one of {known}")
            opts.fmt, opts.custom = render.PRESETS[value], False
        elif name == "--now":
            opts.now = _seconds("--now", value, NOW)
        elif name == "--budget":
            opts.budget_s = _seconds("--budget", value, BUDGET)
        elif name == "--width":
            opts.width = int(_seconds("--width", value, WIDTH))
        else:
            raise render.UsageError(f"unknown argument {name!r}; {USAGE}")
    return opts


DEFAULT_WIDTH = 80


def terminal_width() -> int | None:
    """The width of the terminal Claude Code draws in: ``COLUMNS`` when set, else the
    size of the controlling terminal (stdin and stdout are pipes, ``/dev/tty`` is not);
    ``None`` when neither tells."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
        if columns >= 20:
            return columns
    except ValueError:
        pass
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        columns = os.get_terminal_size(fd).columns
        return columns if columns >= 20 else None
    except OSError:
        return None
    finally:
        os.close(fd)


def use_color(opts: Options) -> bool:
    if opts.color is not None:
        return opts.color
    # Claude Code reads the line through a pipe and renders ANSI colours, so a tty test
    # would always say no; NO_COLOR (https://no-color.org) and TERM=dumb opt out.
    return not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"

"""``cachediag statusline``: stdin JSON in, one line (or ``--json``) out, always exit 0.

The warm path (no file changed since the last run) imports only ``os``, ``sys``,
``time``, ``math``, ``zlib`` and the C JSON scanner (see ``jsonlite``), plus this
package's stdlib-only modules; ``track`` (reader, ledger) is loaded when new lines may
hold a request, and ``json`` only to write JSON. Any failure prints a short fallback and
logs the details under the cache dir: a status line that errors or prints nothing is
blanked by Claude Code.
"""

from __future__ import annotations

import os
import sys
import time

from cachediag.commands.options import BUDGET, NOW, WIDTH, Option
from cachediag.statusline import jsonlite, refresh, render, view
from cachediag.statusline.log import describe, heard, log_failure

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from typing import IO, Any

USAGE = (
    "usage: cachediag statusline [--json] [--format TEMPLATE] [--preset full|compact|cache] "
    "[--color|--no-color] [--now EPOCH] [--budget SECONDS] [--width COLUMNS] [--check]"
)
MAX_STDIN_BYTES = 16 << 20
"""Claude Code's object is a few KB; more than this is not it (and is not read whole)."""
BUDGET_S = 1.0
"""Default time budget of one run (``--budget``, ``CACHEDIAG_STATUSLINE_BUDGET``)."""
READ_SHARE = 0.7
"""Share of the budget spent reading; the rest is for saving the state and printing."""


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


def build_view(
    payload: Any,
    now: float,
    root: str | None = None,
    deadline: float | None = None,
    fields: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Everything the line and the JSON show, as plain values; ``fields``: those of the
    template, for what only some fields need (the history's spend)."""
    obj = payload if isinstance(payload, dict) else {}
    out: dict[str, Any] = {"now": now, "source": "none", "prompt_cache": None}
    transcript = obj.get("transcript_path")
    if isinstance(transcript, str) and transcript and "\x00" not in transcript:
        transcript = os.path.abspath(os.path.expanduser(transcript))
        heard.facts["transcript"] = transcript
        not_yet = _own_transcript(obj, transcript)
        if not os.path.isfile(transcript):
            if not_yet and not os.path.lexists(transcript):
                out["transcript"] = render.NOT_WRITTEN  # before the first response
            else:
                out["transcript"] = "missing"
                log_failure("transcript_path is not a file" + _missing_why(transcript))
        else:
            try:
                out.update(refresh.transcript_view(transcript, now, root, deadline))
                out["transcript"] = "read"
            except Exception as exc:  # Claude Code's own object may still make a line
                log_failure(f"transcript not read: {describe(exc)}")
                out["transcript"] = "unreadable"
            else:
                main = out.get("main_prompt_cache")
                if not_yet and isinstance(main, dict) and not main.get("requests"):
                    out["transcript"] = render.NOT_WRITTEN  # the prompt, not its answer
                _add_spend(out, transcript, now, root, deadline, fields, obj)
    elif isinstance(payload, dict):
        if "transcript_path" in obj:
            log_failure("transcript_path is not a usable path string")
        elif not isinstance(obj.get("prompt_cache"), dict):
            log_failure("stdin has neither transcript_path nor prompt_cache")
    out["payload"] = {k: obj[k] for k in PAYLOAD_FIELDS if isinstance(obj.get(k), dict)}
    view.combine(out, obj.get("prompt_cache"))
    return out


PAYLOAD_FIELDS = ("model", "cost", "context_window", "rate_limits")
"""The parts of Claude Code's object the usage fields read (``usage_fields``)."""
SPEND_FIELDS = frozenset({"session_cost", "today_cost", "block_cost", "block_left"})
HISTORY_FIELDS = frozenset({"today_cost", "block_cost", "block_left"})
"""Fields that need every transcript of the config folder, not only the session's."""
SPEND_SLICE_S = 0.05


def _add_spend(
    out: dict[str, Any],
    transcript: str,
    now: float,
    root: str | None,
    deadline: float | None,
    fields: frozenset[str],
    payload: dict[str, Any],
) -> None:
    """The session's, today's and the block's cost, when the template shows one: from
    the history index (``spend``); a failure leaves the fields out, never the line.

    When only the session's cost is wanted and Claude Code sent its own, cachediag's is
    but the check beside it: its index is built a slice at a time (``SPEND_SLICE_S``
    per run that read the transcript): no second read of a long transcript at once."""
    if not fields & SPEND_FIELDS:
        return
    history, build = bool(fields & HISTORY_FIELDS), True
    if not history and render.number(payload.get("cost"), "total_cost_usd") is not None:
        ends = time.monotonic() + SPEND_SLICE_S
        deadline = ends if deadline is None else min(deadline, ends)
        # Unchanged files: the check's summary only (its slices go to runs that read).
        build = heard.facts.get("how") != refresh.UNCHANGED
    try:
        from cachediag.statusline.spend import spend_view as read

        spent = read(transcript, now, history=history, root=root, deadline=deadline, build=build)
    except Exception as exc:
        log_failure(f"spend not read: {describe(exc)}")
        return
    # Not read whole within the budget: those fields are left out this time (the index
    # keeps what was read, the next run goes on); the cache's numbers are not partial.
    spent.pop("partial", None)
    out["usage"] = {**out.get("usage", {}), **spent}


def _own_transcript(payload: dict[str, Any], path: str) -> bool:
    """Whether the payload is that of a session with no response yet: Claude Code names
    the session and its transcript before writing it (``<session_id>.jsonl`` in 2.1.x,
    but the name is its business), and nothing was spent so far (a session that spent
    money and has no transcript has a real problem)."""
    sid = payload.get("session_id")
    if not (isinstance(sid, str) and sid.strip()):
        return False
    spent = render.number(payload.get("cost"), "total_cost_usd")
    return spent is None or spent <= 0


def _missing_why(path: str) -> str:
    """Why a path is not a readable file, in a few words (never its content)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return " (no such file)"
    except OSError as exc:
        return f" ({exc.strerror or type(exc).__name__})"
    return " (not a regular file)"


def _fallback(as_json: bool, error: str) -> str:
    if as_json:
        import json

        return json.dumps({"prompt_cache": None, "cachediag": {"version": 1, "error": error}})
    return render.FALLBACK


def run(
    args: list[str],
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """The whole status line; returns the exit status: always 0, except that ``--check``
    returns 1 when it found a problem, and a mistake in the arguments made at a terminal
    is one ``Error:`` line and 2 (piped, as Claude Code runs it, it is still a line).

    When a person is looking (``--check``, or stdin or stderr is a terminal: Claude Code
    pipes both), the reason for a fallback is printed on stderr too; stdout is one line.
    """
    started = time.monotonic()
    heard.restart()
    out, err = stdout or sys.stdout, stderr or sys.stderr
    source = stdin or sys.stdin.buffer
    as_json, check = "--json" in args, "--check" in args
    at_terminal = _isatty(source)
    payload: Any = None
    out_view: dict[str, Any] | None = None
    budget = BUDGET_S
    try:
        opts = parse_args(args)
        budget = opts.budget_s
        if check and at_terminal:
            raw = b""  # nothing to wait for: the report says how to pipe an object in
            heard.facts["stdin"] = "a terminal: nothing read"
        else:
            if at_terminal:
                _tell(err, "reading Claude Code's JSON from stdin (end it with Ctrl-D); "
                      "'cachediag statusline --check < FILE' reports what it finds")  # fmt: skip
            raw = source.read(MAX_STDIN_BYTES + 1)
        payload = _payload(raw)
        now = time.time() if opts.now is None else opts.now
        fields = frozenset(n for _, n in render.parse_format(opts.fmt) if n and not opts.as_json)
        out_view = build_view(
            payload, now, deadline=started + opts.budget_s * READ_SHARE, fields=fields
        )
        if opts.as_json:
            import json

            text = json.dumps(view.json_object(payload, out_view), allow_nan=False)
        else:
            # A report is read in a terminal or a file, not rendered by Claude Code.
            color = use_color(opts) if not check or opts.color is not None else False
            width = terminal_width() if opts.width is None else opts.width
            # A width nobody told: only tool names shrink (to 80), no field is dropped.
            text = render.render_line(
                out_view,
                opts.fmt,
                color,
                width or DEFAULT_WIDTH,
                keep_fields=width is None and opts.custom,
            )
    except render.UsageError as exc:
        # A mistake in our own arguments: one plain line for a person at a terminal
        # (exit 2, as for any usage error); Claude Code, piping both, still gets a line.
        log_failure(str(exc))
        if not check and (at_terminal or _isatty(err)):
            _error(err, str(exc))
            return 2
        text = _fallback(as_json, "failed; see statusline.log in the cache dir")
    except Exception as exc:
        log_failure(describe(exc))
        text = _fallback(as_json, "failed; see statusline.log in the cache dir")
    heard.facts["took_s"] = time.monotonic() - started
    if check:
        from cachediag.statusline.check import report

        return report(out, text, out_view, payload, budget)
    try:
        out.write(text + "\n")
        out.flush()
    except (OSError, ValueError):
        pass  # Claude Code cancelled us and closed the pipe
    if at_terminal or _isatty(err):
        for problem in dict.fromkeys(heard.problems):
            _tell(err, problem)
    return 0


def _payload(raw: bytes) -> Any:
    """Claude Code's object from stdin; ``None`` for anything that is not JSON."""
    if len(raw) > MAX_STDIN_BYTES:
        log_failure("stdin larger than 16 MiB: not Claude Code's object")
        return None
    if not raw.strip():
        log_failure("stdin is empty: Claude Code pipes a JSON object with transcript_path")
        return None
    try:
        payload = jsonlite.loads(raw)
    except (ValueError, RecursionError) as exc:
        log_failure(f"stdin is not JSON ({type(exc).__name__})")
        return None
    if not isinstance(payload, dict):
        log_failure(f"stdin is a JSON {type(payload).__name__}, not an object")
    heard.facts["stdin_bytes"] = len(raw)
    return payload


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _tell(err: IO[str], message: str) -> None:
    _say(err, "cachediag statusline: ", message)


def _error(err: IO[str], message: str) -> None:
    _say(err, "Error: ", message)


def _say(err: IO[str], prefix: str, message: str) -> None:
    """One printable line on stderr; a closed or broken stderr is no failure of the line."""
    try:
        err.write(f"{prefix}{render.printable(message, 300)}\n")
        err.flush()
    except (OSError, ValueError):
        pass


def _default_signals() -> None:
    """SIGINT ends the process at once, like SIGTERM (no traceback, nothing deferred):
    the state is only ever replaced whole, so stopping anywhere leaves it consistent."""
    try:
        import _signal  # type: ignore[import-not-found]

        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    except (ImportError, ValueError, OSError, AttributeError):  # pragma: no cover
        pass


def main() -> None:
    _default_signals()
    args = sys.argv[2:] if sys.argv[1:2] == ["statusline"] else sys.argv[1:]
    if args[:1] == ["uninstall"]:  # ``entry`` sends only ``install`` (and help) to click
        from cachediag.statusline.install import uninstall_command

        sys.exit(uninstall_command(args[1:]))
    sys.exit(run(args))

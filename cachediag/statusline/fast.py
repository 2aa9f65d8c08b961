"""``cachediag statusline``: stdin JSON in, one line (or ``--json``) out, always exit 0.

The warm path (no file changed since the last run) imports only ``os``, ``sys``,
``time``, ``math``, ``zlib`` and the C JSON scanner (see ``jsonlite``), plus this
package's stdlib-only modules (``arguments``: what the run was asked; ``stdio``: stdin,
the fallback, stderr); ``track`` (reader, ledger) is loaded when new lines may
hold a request, and ``json`` only to write JSON. Any failure prints a short fallback and
logs the details under the cache dir: a status line that errors or prints nothing is
blanked by Claude Code.
"""

from __future__ import annotations

import os
import sys
import time

from cachediag.statusline import refresh, render, view
from cachediag.statusline.arguments import (
    BUDGET_S,
    DEFAULT_WIDTH,
    parse_args,
    terminal_width,
    use_color,
)
from cachediag.statusline.log import describe, heard, log_failure
from cachediag.statusline.stdio import (
    MAX_STDIN_BYTES,
    error,
    fallback,
    isatty,
    parse_payload,
    tell,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from collections.abc import Callable
    from typing import IO, Any

# parse_args and terminal_width live in ``arguments``; callers (the tests) find them here.
__all__ = ["build_view", "main", "parse_args", "run", "terminal_width"]

READ_SHARE = 0.7
"""Share of the budget spent reading; the rest is for saving the state and printing."""


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
            spend = _spend_read(transcript, now, root, deadline, fields, obj)
            beside: list[Any] = []

            # The history's spend, when the cache pass reads the transcript whole, is read
            # beside it (``ahead``): both are long, and share nothing but the files.
            def whole() -> None:
                if fields & HISTORY_FIELDS:
                    _read_beside(spend, beside)

            try:
                out.update(refresh.transcript_view(transcript, now, root, deadline, whole))
                out["transcript"] = "read"
            except Exception as exc:  # Claude Code's own object may still make a line
                log_failure(f"transcript not read: {describe(exc)}")
                out["transcript"] = "unreadable"
            else:
                main = out.get("main_prompt_cache")
                if not_yet and isinstance(main, dict) and not main.get("requests"):
                    out["transcript"] = render.NOT_WRITTEN  # the prompt, not its answer
                for child in beside:
                    child.finish(deadline)
                _add_spend(out, spend)
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


def _spend_read(
    transcript: str,
    now: float,
    root: str | None,
    deadline: float | None,
    fields: frozenset[str],
    payload: dict[str, Any],
) -> Callable[[], dict[str, Any]] | None:
    """What reads the session's, today's and the block's cost, when the template shows
    one: from the history index (``spend``); ``None`` when no field needs it.

    When only the session's cost is wanted and Claude Code sent its own, cachediag's is
    but the check beside it: its index is built a slice at a time (``SPEND_SLICE_S``
    per run that read the transcript): no second read of a long transcript at once.
    ``heard.facts["how"]`` says whether this run read the transcript: it is looked at
    when the read is called, after the cache pass has said."""
    if not fields & SPEND_FIELDS:
        return None
    history = bool(fields & HISTORY_FIELDS)
    sent = render.number(payload.get("cost"), "total_cost_usd") is not None

    def read() -> dict[str, Any]:
        until, build = deadline, True
        if not history and sent:
            ends = time.monotonic() + SPEND_SLICE_S
            until = ends if until is None else min(until, ends)
            # Unchanged files: the check's summary only (its slices go to runs that read).
            build = heard.facts.get("how") != refresh.UNCHANGED
        from cachediag.statusline.spend import spend_view

        return spend_view(transcript, now, history=history, root=root, deadline=until, build=build)

    return read


def _read_beside(spend: Callable[[], dict[str, Any]] | None, started: list[Any]) -> None:
    """Called by the cache pass as it starts a whole read: the spend read in a child,
    once (a state found unusable is read again from byte 0, and calls this again)."""
    if spend is None or started:
        return
    from cachediag.statusline import ahead

    child = ahead.Ahead(spend)
    if child.start():
        started.append(child)


def _add_spend(out: dict[str, Any], spend: Callable[[], dict[str, Any]] | None) -> None:
    """The spend fields into ``out["usage"]``; a failure leaves them out, never the line."""
    if spend is None:
        return
    try:
        spent = spend()
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
    at_terminal = isatty(source)
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
                tell(err, "reading Claude Code's JSON from stdin (end it with Ctrl-D); "
                     "'cachediag statusline --check < FILE' reports what it finds")  # fmt: skip
            raw = source.read(MAX_STDIN_BYTES + 1)
        payload = parse_payload(raw)
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
        if not check and (at_terminal or isatty(err)):
            error(err, str(exc))
            return 2
        text = fallback(as_json, "failed; see statusline.log in the cache dir")
    except Exception as exc:
        log_failure(describe(exc))
        text = fallback(as_json, "failed; see statusline.log in the cache dir")
    heard.facts["took_s"] = time.monotonic() - started
    if check:
        from cachediag.statusline.check import report

        return report(out, text, out_view, payload, budget)
    try:
        out.write(text + "\n")
        out.flush()
    except (OSError, ValueError):
        pass  # Claude Code cancelled us and closed the pipe
    if at_terminal or isatty(err):
        for problem in dict.fromkeys(heard.problems):
            tell(err, problem)
    return 0


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
    from cachediag.statusline import ahead

    ahead.enabled = True  # this process is the status line's own: it may fork
    args = sys.argv[2:] if sys.argv[1:2] == ["statusline"] else sys.argv[1:]
    if args[:1] == ["uninstall"]:  # ``entry`` sends only ``install`` (and help) to click
        from cachediag.statusline.install import uninstall_command

        sys.exit(uninstall_command(args[1:]))
    sys.exit(run(args))

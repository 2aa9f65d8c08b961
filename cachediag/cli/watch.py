"""``cachediag watch``: follow live sessions and report each request as it lands."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from cachediag.cli.common import USD, pricing_option
from cachediag.cli.window import Bound, Window, resolve_window, window_options, zone_or_local
from cachediag.console import report_issues
from cachediag.errors import InputError
from cachediag.report.serialize import json_line

if TYPE_CHECKING:
    from datetime import tzinfo

    from cachediag.follow.events import Tally, WatchEvent
    from cachediag.follow.follower import Follower


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: one event per line, flushed.")
@click.option("--once", is_flag=True, help="Report what the files hold now, then exit.")
@click.option(
    "--from-start", is_flag=True, help="Report what the files already hold, then keep following."
)
@click.option("--misses-only", is_flag=True, help="Report only misses (and the final summary).")
@click.option(
    "--min-cost",
    type=USD,
    metavar="USD",
    help="Report only misses that cost at least USD beyond a hit (implies --misses-only).",
)
@click.option("--bell", is_flag=True, help="Ring the terminal bell (on stderr) for each miss.")
@click.option("--schema", is_flag=True, help="Print the JSON Schema of --json events and exit.")
@window_options
@click.option(
    "--now", type=float, metavar="EPOCH", help="Pin the clock that --since 2h counts back from."
)
@pricing_option
def watch(
    paths: tuple[Path, ...],
    as_json: bool,
    once: bool,
    from_start: bool,
    misses_only: bool,
    min_cost: float | None,
    bell: bool,
    schema: bool,
    since: Bound | None = None,
    until: Bound | None = None,
    zone: tzinfo | None = None,
    now: float | None = None,
    pricing_file: Path | None = None,
) -> None:
    """Follow Claude Code sessions live: every request as it lands, misses with their cause.

    PATHS may be transcripts (with their subagents/ folder), session or project folders or
    a whole projects tree; default: ~/.claude/projects (or $CLAUDE_CONFIG_DIR/projects).
    New sessions and subagent files are picked up as they appear.

    By default only what happens after the start is reported (earlier requests are read
    quietly, so the first new one is judged against its real predecessor); --from-start
    reports what the files already hold too, --once reports that and exits. Ctrl-C or
    SIGTERM or SIGHUP ends the watch with a summary per session (exit status 0).

    \b
    Examples:
      cachediag watch                                  everything, live
      cachediag watch --misses-only --min-cost 0.10 --bell
      cachediag watch --json | jq -c 'select(.outcome == "miss")'
      cachediag watch --once --json session.jsonl     what a transcript holds, as events
      cachediag watch --once --since 2h               the past two hours' requests

    --since/--until (with --once or --from-start) report only the events of that window;
    the summary then counts those alone. Times are shown in --timezone.
    """
    if schema:
        from cachediag.report.watch_contract import watch_schema

        click.echo(json.dumps(watch_schema(), indent=2))
        return
    from cachediag.follow.events import RequestSeen
    from cachediag.follow.layout import scopes_for
    from cachediag.pricing import price_function

    display = zone_or_local(zone)
    window = resolve_window(since, until, time.time() if now is None else now, display)
    if not window.open and not (once or from_start):
        raise click.UsageError("--since/--until need --once or --from-start")
    roots = _roots(paths)
    unreadable = _unreadable(roots) if once else []
    roots = [r for r in roots if all(str(r) != path for path, _ in unreadable)]
    if pricing_file is not None:
        from cachediag.pricing import pricing_source

        pricing_source(pricing_file)  # a price file that cannot be used: an error now
    alerts_only = misses_only or min_cost is not None
    stop = threading.Event()
    out = _Output(as_json, stop, display)
    windowed = _Windowed(window)

    def emit(event: WatchEvent) -> None:
        if not windowed.keep(event):
            return
        if alerts_only and not _alert(event, min_cost):
            return
        for header in windowed.headers_for(event):
            out.event(header)
        out.event(event)
        if bell and isinstance(event, RequestSeen) and event.entry.outcome.value == "miss":
            click.echo("\a", nl=False, err=True)

    follower = _announcing(
        roots if not once else None,
        scopes_for(str(p) for p in roots),
        emit,
        price_function(pricing_file),
        from_start=from_start or once,
        stop=stop,
    )
    from cachediag.follow.source import Interrupted, Loop

    loop = Loop()
    previous = _on_signals(stop, loop)
    try:
        if once:
            follower.start()
        else:
            from cachediag.follow.source import WatchdogSource, run

            run(follower, WatchdogSource(), stop, loop)
    except Interrupted:
        pass  # a signal while waiting: the summary follows
    finally:
        _restore(previous)
    out.summary(follower.summaries() if window.open else windowed.summaries())
    report_issues(follower.issues)
    if unreadable:
        from cachediag.console import raise_errors

        raise_errors([message for _, message in unreadable])


def _roots(paths: tuple[Path, ...]) -> list[Path]:
    if not paths:
        from cachediag.pipeline import default_paths

        return default_paths()
    for p in paths:
        if not p.exists():
            raise InputError(f"{p}: no such file or directory")
        if not (p.is_file() or p.is_dir()):
            raise InputError(f"{p}: not a regular file or directory")
    return list(paths)


def _unreadable(roots: list[Path]) -> list[tuple[str, str]]:
    """Named files that are not logs (empty, binary, not JSON Lines) or cannot be read:
    ``--once`` says so as ``analyze`` does, and watches the rest."""
    from cachediag.errors import NotALogError
    from cachediag.ingest.detect import SNIFF_LINES, detect_format

    found = []
    for root in roots:
        if not root.is_file():
            continue
        try:
            with root.open("rb") as f:
                head = [line for _, line in zip(range(SNIFF_LINES), f, strict=False)]
            detect_format(head, str(root))
        except NotALogError as exc:
            found.append((str(root), str(exc)))
        except OSError as exc:
            found.append((str(root), f"{root}: cannot be read: {exc.strerror}"))
    return found


def _announcing(roots: list[Path] | None, *args: Any, **kwargs: Any) -> Follower:
    """A follower that says on stderr, once the existing files are found, what it follows
    under ``roots`` and how to stop: a silent terminal looks like a hung one. ``None``
    (--once): a plain follower."""
    from cachediag.follow.follower import Follower

    if roots is None:
        return Follower(*args, **kwargs)
    named = roots

    class Announcing(Follower):
        def start(self) -> None:
            super().start()
            where = ", ".join(str(r) for r in named[:3])
            more = f" and {len(named) - 3} more" if len(named) > 3 else ""
            n = len(self.sessions)
            click.echo(
                f"cachediag: watching {n} session{'s' if n != 1 else ''} under {where}{more} "
                "for new requests; Ctrl-C stops with a summary",
                err=True,
            )

    return Announcing(*args, **kwargs)


class _Windowed:
    """Events inside ``--since``/``--until``; a session's header only once it has one,
    and the tallies of what was shown."""

    def __init__(self, window: Window) -> None:
        self.window = window
        self._headers: dict[str, WatchEvent] = {}
        self._shown: set[str] = set()
        self._tallies: dict[str, Tally] = {}

    def keep(self, event: WatchEvent) -> bool:
        from cachediag.follow.events import RebuildSeen, RequestSeen, SessionSeen, Tally

        if self.window.open:
            return True
        key = event.session.transcript
        if isinstance(event, SessionSeen):
            if key not in self._shown:
                self._headers[key] = event
            return False
        if isinstance(event, RequestSeen):
            at = event.entry.record.at
        elif isinstance(event, RebuildSeen):
            at = event.event.at
        else:
            at = event.at
        if not self.window.holds(at):
            return False
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = Tally(event.session)
        if isinstance(event, RequestSeen):
            tally.add(event)
        elif isinstance(event, RebuildSeen):
            tally.compactions += 1
        return True

    def headers_for(self, event: WatchEvent) -> list[WatchEvent]:
        key = event.session.transcript
        self._shown.add(key)
        header = self._headers.pop(key, None)
        return [] if header is None else [header]

    def summaries(self) -> list[Tally]:
        return [t for t in self._tallies.values() if t.requests]


def _alert(event: Any, min_cost: float | None) -> bool:
    from cachediag.follow.events import RequestSeen

    if not isinstance(event, RequestSeen) or event.entry.outcome.value != "miss":
        return False
    cost = event.cost.miss_cost_usd
    # A miss of unknown price is shown: it may well be an expensive one.
    return min_cost is None or cost is None or cost >= min_cost


def _on_signals(stop: threading.Event, loop: Any) -> dict[int, Any]:
    """Ctrl-C, SIGTERM and SIGHUP (the terminal closed) end the loop cleanly (summary,
    exit 0) instead of killing it; a loop that is only waiting is woken at once."""
    from cachediag.follow.source import Interrupted

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()
        if loop.idle:
            raise Interrupted

    previous: dict[int, Any] = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        # Not possible outside the main thread (a test running the command in a thread).
        if sig is not None:
            with contextlib.suppress(ValueError):
                previous[sig] = signal.signal(sig, handler)
    return previous


def _restore(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


class _Output:
    """Events to stdout, flushed one by one; a closed pipe (``| head``) ends the watch."""

    def __init__(self, as_json: bool, stop: threading.Event, zone: tzinfo) -> None:
        self.as_json = as_json
        self.zone = zone
        self.stop = stop
        self.closed = False
        self.console: Any = None
        if not as_json:
            from cachediag.console import SafeConsole

            self.console = SafeConsole(highlight=False)

    def _write(self, text: str) -> None:
        if self.closed:
            return
        try:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        except OSError:  # a closed pipe (| head) or a terminal gone (SIGHUP)
            self._close()

    def _close(self) -> None:
        import os

        self.closed = True
        self.stop.set()
        # Python would complain again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())

    def event(self, event: Any) -> None:
        if self.as_json:
            from cachediag.report.watch import event_dict

            self._write(json_line(event_dict(event)))
            return
        from cachediag.report.watch_view import event_line

        try:
            line = event_line(event, zone=self.zone, width=self.console.width)
            self.console.print(line, soft_wrap=True)
        except OSError:  # a closed pipe (| head) or a terminal gone (SIGHUP)
            self._close()

    def summary(self, tallies: list[Any]) -> None:
        if self.as_json:
            from cachediag.report.watch import summary_dict

            now = time.time()
            for tally in tallies:
                self._write(json_line(summary_dict(tally, now)))
            return
        from cachediag.report.watch_view import print_summary

        if self.closed:
            return
        try:
            print_summary(self.console, tallies)
        except OSError:  # a closed pipe (| head) or a terminal gone (SIGHUP)
            self._close()

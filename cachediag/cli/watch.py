"""``cachediag watch``: follow live sessions and report each request as it lands."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cachediag.cli.common import USD, agent_option, pricing_option
from cachediag.cli.window import window_options
from cachediag.commands.window import Bound, resolve_window, zone_or_local
from cachediag.console import report_issues, silence_stdout
from cachediag.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import tzinfo

    from cachediag.follow.events import Tally, WatchEvent


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
    help=(
        "Report only misses whose re-cache cost (beyond a hit) is at least USD"
        " (implies --misses-only)."
    ),
)
@click.option("--bell", is_flag=True, help="Ring the terminal bell (on stderr) for each miss.")
@click.option("--schema", is_flag=True, help="Print the JSON Schema of --json events and exit.")
@window_options
@click.option(
    "--now", type=float, metavar="EPOCH", help="Pin the clock that --since 2h counts back from."
)
@pricing_option
@agent_option
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
    agent: str | None = None,
) -> None:
    """Follow agent sessions live: every request as it lands, misses with their cause.

    PATHS may be transcripts (with their subagents/ folder), session or project folders or
    a whole projects tree, Codex rollouts, Gemini CLI chats, opencode's database or the
    folders holding them; default: every agent's history found (~/.claude/projects or
    $CLAUDE_CONFIG_DIR/projects, ~/.codex/sessions, ~/.gemini/tmp,
    ~/.local/share/opencode), or --agent's. New sessions and subagent files are picked up
    as they appear.

    By default only what happens after the start is reported (earlier requests are read
    quietly, so the first new one is judged against its real predecessor); --from-start
    reports what the files already hold too, --once reports that and exits. Ctrl-C or
    SIGTERM or SIGHUP ends the watch with a summary per session (exit status 0).

    \b
    Examples:
      cachediag watch                              everything, live
      cachediag watch --misses-only --min-cost 0.10 --bell
      cachediag watch --json | jq -c 'select(.outcome == "miss")'
      cachediag watch --once --json session.jsonl  a transcript, as events
      cachediag watch --once --since 2h            the past two hours' requests
      cachediag watch --agent codex                Codex sessions only

    --since/--until (with --once or --from-start) report only the events of that window;
    the summary then counts those alone. Times are shown in --timezone.
    """
    if schema:
        from cachediag.report.watch_contract import watch_schema

        click.echo(json.dumps(watch_schema(), indent=2))
        return
    from cachediag.commands.agents import agents_for
    from cachediag.follow.follower import Follower
    from cachediag.follow.layout import scopes_for
    from cachediag.follow.select import Selection, is_miss
    from cachediag.follow.source import Interrupted, Loop, stopped_by_signals
    from cachediag.pricing import price_function

    display = zone_or_local(zone)
    window = resolve_window(since, until, time.time() if now is None else now, display)
    if not window.open and not (once or from_start):
        raise click.UsageError("--since/--until need --once or --from-start")
    agents = agents_for(agent)
    roots = _roots(paths, agents)
    unreadable = _unreadable(roots) if once else []
    roots = [r for r in roots if all(str(r) != path for path, _ in unreadable)]
    if pricing_file is not None:
        from cachediag.pricing import pricing_source

        pricing_source(pricing_file)  # a price file that cannot be used: an error now
    stop = threading.Event()
    out = _Output(as_json, stop, display)
    selection = Selection(window, alerts_only=misses_only, min_cost=min_cost)

    def emit(event: WatchEvent) -> None:
        shown = selection.shown(event)
        for each in shown:
            out.event(each)
        if bell and shown and is_miss(event):
            click.echo("\a", nl=False, err=True)

    follower = Follower(
        scopes_for(str(p) for p in roots),
        emit,
        price_function(pricing_file),
        from_start=from_start or once,
        stop=stop,
        on_found=None if once else _announce([str(r) for r in roots], agents),
        agents=agents,
    )
    loop = Loop()
    with stopped_by_signals(stop, loop):
        try:
            if once:
                follower.start()
            else:
                from cachediag.follow.source import WatchdogSource, run

                run(follower, WatchdogSource(), stop, loop)
        except Interrupted:
            pass  # a signal while waiting: the summary follows
    out.summary(selection.summaries(follower.summaries()))
    report_issues(follower.all_issues())
    if unreadable:
        from cachediag.console import raise_errors

        raise_errors([message for _, message in unreadable])


def _roots(paths: tuple[Path, ...], agents: frozenset[str] | None) -> list[Path]:
    from cachediag.ingest.agents import agent_named

    if not paths:
        from cachediag.follow.layout import agent_homes
        from cachediag.pipeline import default_paths

        # The folders, not the files found in them: sessions started later are seen.
        # None at all: the error every command gives (it says where it looked).
        return agent_homes(agents) or default_paths(agents)
    for p in paths:
        if not p.exists():
            raise InputError(f"{p}: no such file or directory")
        if not (p.is_file() or p.is_dir()):
            raise InputError(f"{p}: not a regular file or directory")
        whose = agent_named(p.name) or "claude"
        if p.is_file() and agents is not None and whose not in agents:
            raise InputError(f"{p}: a {whose} session file, not {' or '.join(sorted(agents))}'s")
    return list(paths)


def _unreadable(roots: list[Path]) -> list[tuple[str, str]]:
    """Named files that are not logs (empty, binary, not JSON Lines) or cannot be read:
    ``--once`` says so as ``analyze`` does, and watches the rest."""
    from cachediag.errors import NotALogError
    from cachediag.ingest.agents import agent_named
    from cachediag.ingest.detect import SNIFF_LINES, detect_format

    found = []
    for root in roots:
        if not root.is_file():
            continue
        if (agent := agent_named(root.name)) is not None:
            if (why := _not_agent_log(agent, root)) is not None:
                found.append((str(root), why))
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


def _not_agent_log(agent: str, path: Path) -> str | None:
    """Why another agent's file named is not one of its logs (its reader says), or
    ``None``."""
    from cachediag.ingest.agents import is_session, not_a_log, read_logs

    logs = read_logs(agent, path)
    if any(is_session(log) for log in logs):
        return None
    unreadable = next((i for log in logs for i in log.unreadable), None)
    return f"{path}: {unreadable.reason}" if unreadable else not_a_log(agent, path, logs)


def _announce(roots: list[str], agents: frozenset[str] | None) -> Callable[[dict[str, int]], None]:
    """What a live watch says on stderr once the existing files are found, before it
    reads them: how many sessions of which agents (those asked for, even with none)."""
    from cachediag.report.watch_view import start_line

    def found(counts: dict[str, int]) -> None:
        asked = dict.fromkeys(sorted(agents or ()), 0)
        click.echo(start_line(roots, {**asked, **counts}), err=True)

    return found


class _Output:
    """Events to stdout, flushed one by one: JSON Lines, or lines for people
    (``report.watch_view``); a closed pipe (``| head``) ends the watch."""

    def __init__(self, as_json: bool, stop: threading.Event, zone: tzinfo) -> None:
        self.stop = stop
        self.closed = False
        self.people = None
        if not as_json:  # rich is loaded only for people
            from cachediag.report.watch_view import PeopleOutput

            self.people = PeopleOutput(zone, self._close)

    def _write(self, text: str) -> None:
        if self.closed:
            return
        try:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        except OSError:  # a closed pipe (| head) or a terminal gone (SIGHUP)
            self._close()

    def _close(self) -> None:
        self.closed = True
        self.stop.set()
        silence_stdout()

    def event(self, event: WatchEvent) -> None:
        if self.people is not None:
            self.people.event(event)
            return
        from cachediag.report.serialize import json_line
        from cachediag.report.watch import event_dict

        self._write(json_line(event_dict(event)))

    def summary(self, tallies: list[Tally]) -> None:
        if self.closed:
            return
        if self.people is not None:
            self.people.summary(tallies)
            return
        from cachediag.report.serialize import json_line
        from cachediag.report.watch import summary_dict

        now = time.time()
        for tally in tallies:
            self._write(json_line(summary_dict(tally, now)))

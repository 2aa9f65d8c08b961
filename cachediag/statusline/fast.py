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

from cachediag.paths import cache_dir
from cachediag.safefiles import open_private, private_dir
from cachediag.statusline import jsonlite, render, state

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from typing import IO, Any

USAGE = (
    "usage: cachediag statusline [--json] [--format TEMPLATE] [--color|--no-color] "
    "[--now EPOCH] [--budget SECONDS]"
)
MAX_LOG_BYTES = 256 * 1024
MAX_STDIN_BYTES = 16 << 20
"""Claude Code's object is a few KB; more than this is not it (and is not read whole)."""
BUDGET_S = 1.0
"""Default time budget of one run (``--budget``, ``CACHEDIAG_STATUSLINE_BUDGET``)."""
READ_SHARE = 0.7
"""Share of the budget spent reading; the rest is for saving the state and printing."""


class Options:
    __slots__ = ("as_json", "budget_s", "color", "fmt", "now")

    def __init__(self) -> None:
        self.as_json = False
        self.fmt = render.DEFAULT_FORMAT
        self.color: bool | None = None
        self.now: float | None = None
        self.budget_s = BUDGET_S


def _seconds(name: str, value: str, low: float, high: float) -> float:
    try:
        number = float(value)
    except ValueError:
        raise render.UsageError(f"{name} must be a number, not {value[:40]!r}") from None
    if not low <= number <= high:  # NaN fails this too
        raise render.UsageError(f"{name} must be between {low:g} and {high:g}")
    return number


def parse_args(args: list[str]) -> Options:
    opts = Options()
    configured = os.environ.get("CACHEDIAG_STATUSLINE_BUDGET", "").strip()
    if configured:
        opts.budget_s = _seconds("CACHEDIAG_STATUSLINE_BUDGET", configured, 0.05, 60)
    it = iter(args)
    for arg in it:
        name, eq, value = arg.partition("=")
        if name in ("--format", "--now", "--budget") and not eq:
            following = next(it, None)
            if following is None:
                raise render.UsageError(f"{name} needs a value")
            value = following
        if name == "--json" and not eq:
            opts.as_json = True
        elif name in ("--color", "--no-color") and not eq:
            opts.color = name == "--color"
        elif name == "--format":
            render.parse_format(value)  # a bad template is reported, not half-rendered
            opts.fmt = value
        elif name == "--now":
            opts.now = _seconds("--now", value, 0, 1e11)
        elif name == "--budget":
            opts.budget_s = _seconds("--budget", value, 0.05, 60)
        else:
            raise render.UsageError(f"unknown argument {name!r}; {USAGE}")
    return opts


def use_color(opts: Options) -> bool:
    if opts.color is not None:
        return opts.color
    # Claude Code reads the line through a pipe and renders ANSI colours, so a tty test
    # would always say no; NO_COLOR (https://no-color.org) and TERM=dumb opt out.
    return not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def log_failure(message: str) -> None:
    """Append to ``<cache dir>/statusline.log``; never raises, never logs stdin content."""
    try:
        folder = cache_dir()
        private_dir(folder, folder)
        path = os.path.join(folder, "statusline.log")
        try:
            if os.lstat(path).st_size > MAX_LOG_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        with os.fdopen(fd, "a", encoding="utf-8", errors="replace") as fp:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            fp.write(f"{stamp} pid={os.getpid()} {message}\n")
    except Exception:  # the log is best effort; the line must still print
        pass


def _describe(exc: BaseException) -> str:
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(frames))
    # The exception's class and where it happened; its message only when it is ours.
    text = str(exc)[:200] if isinstance(exc, render.UsageError | state.BadState | OSError) else ""
    return f"{type(exc).__name__}: {text} at {where}"


def session_state(
    transcript: str,
    now: float,
    root: str | None = None,
    *,
    fresh: bool = False,
    deadline: float | None = None,
) -> dict[str, Any]:
    """The session's state, brought up to date with the transcript and its agents;
    ``fresh`` ignores the saved state and replaces it. Reading stops at ``deadline``
    (``time.monotonic``); what was read is saved and the header says ``partial``.

    A state folder that is not this user's alone is not used at all (neither read nor
    written): the state is computed from the files and thrown away.
    """
    files = [transcript, *state.agent_files(transcript)]
    try:
        path: str | None = os.path.join(
            state.state_dir(root), os.path.basename(state.state_path(transcript, root))
        )
    except OSError as exc:
        log_failure(f"state folder not used: {exc}")
        path = None
    header, rest = None, b""
    if path is not None and not fresh:
        try:
            header, rest = state.load_header(path)
        except state.BadState as exc:
            log_failure(f"{exc}; recomputed")
    if path is not None and header is not None and header.get("transcript") == transcript:
        if state.unchanged(header, files):
            return header
        moved = state.skip_request_free_appends(header, files)
        if moved is not None:
            _save_moved(path, header, moved, rest)
            return moved
    from cachediag.statusline.track import encode_state, refresh

    def stop() -> bool:
        return deadline is not None and time.monotonic() > deadline

    with state.WriterLock(path) as may_write:
        if may_write and not fresh:
            assert path is not None
            try:  # a sibling may have saved meanwhile
                header, rest = state.load_header(path)
            except state.BadState:
                header, rest = None, b""
        header, readers = refresh(
            transcript, files[1:], header, rest, now, stop=stop, on_problem=log_failure
        )
        if may_write:
            assert path is not None
            try:
                state.save(path, *encode_state(header, readers))
            except OSError as exc:
                log_failure(f"state not saved: {_describe(exc)}")
            gone = state.sweep(os.path.dirname(path))
            if gone:
                log_failure(f"housekeeping: state of {gone} vanished transcript(s) removed")
    return header


def _save_moved(path: str, based_on: dict[str, Any], moved: dict[str, Any], rest: bytes) -> None:
    """Save new file positions, unless a sibling saved another state meanwhile (then its
    state, at least as far along, is kept)."""
    import json

    with state.WriterLock(path) as may_write:
        if not may_write:
            return
        try:
            if state.load_header(path)[0] != based_on:
                return
            state.save(path, json.dumps(moved, separators=(",", ":")).encode(), rest.strip())
        except (OSError, ValueError) as exc:
            log_failure(f"state not saved: {_describe(exc)}")


def _streams(
    header: dict[str, Any], now: float
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The main stream and the others (in the order they started) from a state header."""
    main = None
    others: list[dict[str, Any]] = []
    for sid, s in header["streams"].items():
        pc = dict(s["prompt_cache"])
        # The one clock-dependent field (prompt-cache.md §3), against this run's now.
        pc["warm"] = pc["expires_at"] is not None and now < pc["expires_at"]
        entry = {**s, "id": sid, "prompt_cache": pc}
        if sid == "main":
            main = entry
        else:
            others.append(entry)
    others.sort(key=lambda s: (s["first_at"] is None, s["first_at"] or 0.0, s["id"]))
    return main, others


def _session_view(header: dict[str, Any], now: float) -> dict[str, Any]:
    """What a session's state adds to the view; raises on a state of the wrong shape."""
    main, streams = _streams(header, now)
    bad = header.get("unreadable") or {}
    out: dict[str, Any] = {
        "streams": streams,
        "subagents": _subagents(streams, now),
        "partial": header.get("partial") is True,
        "unreadable_files": sorted(bad) if isinstance(bad, dict) else [],
    }
    if main is not None:
        pc = main["prompt_cache"]
        if not isinstance(pc["misses"], int) or not isinstance(main["unpriced_models"], list):
            raise TypeError("state: main stream fields of the wrong type")
        out["main_prompt_cache"] = pc
        out["miss_cost_usd"] = main["miss_cost_usd"]
        out["unpriced_models"] = main["unpriced_models"]
    return out


def _subagents(streams: list[dict[str, Any]], now: float) -> dict[str, Any] | None:
    agents = [s for s in streams if s.get("kind") in ("subagent", "sidechain")]
    if not agents:
        return None
    read = total = requests = misses = warm = 0
    cost: float | None = 0.0
    for s in agents:
        ledger, pc = s["ledger"], s["prompt_cache"]
        read += ledger["read_tokens"]
        total += ledger["read_tokens"] + ledger["creation_tokens"] + ledger["input_tokens"]
        requests += pc["requests"]
        misses += pc["misses"]
        warm += bool(pc["warm"])
        if cost is not None and pc["misses"]:
            cost = None if s["miss_cost_usd"] is None else cost + s["miss_cost_usd"]
    return {
        "streams": len(agents),
        "requests": requests,
        "misses": misses,
        "hit_ratio": read / total if total else None,
        "warm": warm,
        "miss_cost_usd": cost,
    }


AGREEMENT_FIELDS = ("requests", "misses", "expected_rebuilds")
HIT_RATIO_SLACK = 0.005
"""Hit ratios closer than this agree (Claude Code and the transcript may round apart)."""


def agreement(sent: dict[str, Any], computed: dict[str, Any]) -> dict[str, Any]:
    """The fields where Claude Code's object and the transcript's differ, each as
    ``{"claude_code": ..., "transcript": ...}``; empty when they agree."""
    out: dict[str, Any] = {}
    for key in AGREEMENT_FIELDS:
        theirs, ours = render.count(sent, key), computed.get(key)
        if theirs != ours:
            out[key] = {"claude_code": sent.get(key), "transcript": ours}
    theirs_ratio, ours_ratio = render.number(sent, "hit_ratio"), computed.get("hit_ratio")
    if (theirs_ratio is None) != (ours_ratio is None) or (
        theirs_ratio is not None
        and ours_ratio is not None
        and abs(theirs_ratio - ours_ratio) > HIT_RATIO_SLACK
    ):
        out["hit_ratio"] = {"claude_code": sent.get("hit_ratio"), "transcript": ours_ratio}
    causes = sent.get("miss_causes")
    if causes != computed.get("miss_causes"):
        out["miss_causes"] = {"claude_code": causes, "transcript": computed.get("miss_causes")}
    return out


def _transcript_view(
    transcript: str, now: float, root: str | None, deadline: float | None
) -> dict[str, Any]:
    """The session's numbers from its files; any defect of the saved state, whatever it
    raises, means: recompute once from the files (and one line in the log)."""
    try:
        return _session_view(session_state(transcript, now, root, deadline=deadline), now)
    except OSError:
        if not os.access(transcript, os.R_OK):
            raise  # the transcript itself: a fresh start would fail the same way
        exc_info: BaseException | None = None
    except Exception as exc:
        exc_info = exc
    log_failure(
        "state unusable, recomputed" + (f": {_describe(exc_info)}" if exc_info is not None else "")
    )
    return _session_view(session_state(transcript, now, root, fresh=True, deadline=deadline), now)


def build_view(
    payload: Any, now: float, root: str | None = None, deadline: float | None = None
) -> dict[str, Any]:
    """Everything the line and the JSON show, as plain values."""
    obj = payload if isinstance(payload, dict) else {}
    view: dict[str, Any] = {"now": now, "source": "none", "prompt_cache": None}
    transcript = obj.get("transcript_path")
    if isinstance(transcript, str) and transcript and "\x00" not in transcript:
        transcript = os.path.abspath(os.path.expanduser(transcript))
        if not os.path.isfile(transcript):
            view["transcript"] = "missing"
        else:
            try:
                view.update(_transcript_view(transcript, now, root, deadline))
                view["transcript"] = "read"
            except Exception as exc:  # Claude Code's own object may still make a line
                log_failure(f"transcript not read: {_describe(exc)}")
                view["transcript"] = "unreadable"
    computed = view.pop("main_prompt_cache", None)
    view["computed"] = computed
    sent = obj.get("prompt_cache")
    if isinstance(sent, dict):
        view["prompt_cache"], view["source"] = sent, "claude-code"
        # The line shows Claude Code's counts; the cost is that of the misses the
        # transcript shows, and the line says so when the two counts differ.
        view["agreement"] = None if computed is None else agreement(sent, computed)
        if computed is not None and render.count(sent, "misses") != computed["misses"]:
            view["transcript_misses"] = computed["misses"]
    elif computed is not None:
        view["prompt_cache"], view["source"] = computed, "transcript"
    view.setdefault("streams", [])
    view.setdefault("subagents", None)
    return view


def json_object(payload: Any, view: dict[str, Any]) -> dict[str, Any]:
    out = dict(payload) if isinstance(payload, dict) else {}
    if view["source"] == "transcript":
        out["prompt_cache"] = view["prompt_cache"]
    elif view["source"] == "none":
        out.setdefault("prompt_cache", None)
    expires = render.number(view["prompt_cache"], "expires_at")
    extra: dict[str, Any] = {}
    if view["source"] == "claude-code":
        extra = {"computed": view["computed"], "agreement": view.get("agreement")}
    out["cachediag"] = {
        "version": 1,
        "source": view["source"],
        "transcript": view.get("transcript"),
        "partial": bool(view.get("partial")),
        "miss_cost_usd": view.get("miss_cost_usd"),
        "unpriced_models": view.get("unpriced_models", []),
        "seconds_to_expiry": None if expires is None else round(max(0.0, expires - view["now"]), 3),
        "subagents": view["subagents"],
        "unreadable_files": view.get("unreadable_files", []),
        "streams": [
            {
                "id": s["id"],
                "kind": s["kind"],
                "prompt_cache": s["prompt_cache"],
                "miss_cost_usd": s["miss_cost_usd"],
            }
            for s in view["streams"]
        ],
        **extra,
    }
    return out


def _fallback(as_json: bool, error: str) -> str:
    if as_json:
        import json

        return json.dumps({"prompt_cache": None, "cachediag": {"version": 1, "error": error}})
    return render.FALLBACK


def run(args: list[str], stdin: IO[bytes] | None = None, stdout: IO[str] | None = None) -> int:
    """The whole status line; returns the exit status, which is always 0."""
    started = time.monotonic()
    out = stdout or sys.stdout
    as_json = "--json" in args
    try:
        opts = parse_args(args)
        raw = (stdin or sys.stdin.buffer).read(MAX_STDIN_BYTES + 1)
        try:
            if len(raw) > MAX_STDIN_BYTES:
                raise ValueError("stdin larger than 16 MiB")
            payload = jsonlite.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError) as exc:
            log_failure(f"stdin is not JSON ({type(exc).__name__})")
            payload = None
        now = time.time() if opts.now is None else opts.now
        view = build_view(payload, now, deadline=started + opts.budget_s * READ_SHARE)
        if payload is not None and not isinstance(payload, dict):
            log_failure(f"stdin is a JSON {type(payload).__name__}, not an object")
        if opts.as_json:
            import json

            text = json.dumps(json_object(payload, view), allow_nan=False)
        else:
            text = render.render_line(view, opts.fmt, use_color(opts))
    except Exception as exc:
        log_failure(_describe(exc))
        text = _fallback(as_json, "failed; see statusline.log in the cache dir")
    try:
        out.write(text + "\n")
        out.flush()
    except (OSError, ValueError):
        pass  # Claude Code cancelled us and closed the pipe
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
    sys.exit(run(sys.argv[2:] if sys.argv[1:2] == ["statusline"] else sys.argv[1:]))

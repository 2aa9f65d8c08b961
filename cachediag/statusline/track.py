"""Reading only what a transcript gained since the last run, with the one reader and ledger.

Loaded by ``fast`` only when some file changed: this is where the reader, the ledger and
the summary come in (through ``follow.session``, the reader ``watch`` uses too). A file
that was truncated, replaced (new inode) or rewritten before the saved offset restarts
the whole session from byte 0 (a full recompute).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cachediag.analysis.ledger import Ledger, LedgerEntry, Outcome
from cachediag.analysis.summary import build_prompt_cache
from cachediag.follow.files import change_of, file_signature, unchanged_since
from cachediag.follow.live_session import LiveSession
from cachediag.model import RequestRecord, StreamItem, StreamKind
from cachediag.report.serialize import prompt_cache_dict
from cachediag.statusline import codec
from cachediag.statusline.state import STATE_VERSION, BadState, readers_crc
from cachediag.statusline.state import readers as checked_readers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cachediag.analysis.costs import ModelPrices
    from cachediag.pricing.slots import DayPrices

try:  # the reader already loaded orjson when it is installed; json is the fallback
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only without orjson
    _orjson = None  # type: ignore[assignment]


def _dumps(obj: Any) -> bytes:
    if _orjson is not None:
        return _orjson.dumps(obj)
    import json

    return json.dumps(obj, separators=(",", ":")).encode()


def _loads(raw: bytes) -> Any:
    if _orjson is not None:
        return _orjson.loads(raw)
    import json

    return json.loads(raw)


State = dict[str, Any]


def encode_state(header: State, readers: dict[str, Any]) -> tuple[bytes, bytes]:
    body = _dumps(readers)
    return _dumps({**header, "version": STATE_VERSION, "readers_crc": readers_crc(body)}), body


def load_readers(rest: bytes, header: State) -> dict[str, Any]:
    """The readers' saved keys; raises ``BadState`` when line 2 is damaged."""
    readers = _loads(checked_readers(rest, header))
    if not isinstance(readers, dict):
        raise BadState("state readers of the wrong shape")
    return readers


class Session(LiveSession):
    """One session's readers and ledgers, restored from state or started empty."""

    def __init__(self, transcript: str, header: State | None, rest: bytes) -> None:
        super().__init__(transcript)
        from cachediag.proxy.index import live_join

        self.enrich = live_join()  # exact causes when the capture proxy saw the requests
        self.streams: dict[str, dict[str, Any]] = {}
        self.prices: dict[str, Any] = {}
        self.api_errors = 0
        self.unreadable: dict[str, Any] = {}
        """Agent files that could not be read, with their signature at the time."""
        if header is None:
            return
        self.unreadable = dict(header.get("unreadable") or {})
        self.skipped = int(header.get("skipped_lines", 0))
        self.api_errors = int(header.get("api_errors", 0))
        self.prices = dict(header.get("prices", {}))
        self.files = {k: dict(v) for k, v in header["files"].items()}
        for sid, s in header["streams"].items():
            self.streams[sid] = dict(s)
            self.ledgers[sid] = codec.ledger_from_state(s["ledger"])
            self.log.stream(sid, StreamKind(s["kind"]), source=s.get("source"))
        for path, data in load_readers(rest, header).items():
            codec.restore_reader(self.reader(path), data)

    def landed(self, item: StreamItem, entry: LedgerEntry | None) -> None:
        stream = self.streams.setdefault(item.stream, {"misses": [], "first_at": None})
        if entry is None:
            return
        if stream["first_at"] is None:
            stream["first_at"] = entry.record.at
        # The status line's context: the last request's prompt size and model.
        stream["last_prompt_tokens"] = entry.record.total_tokens
        stream["last_model"] = entry.record.model
        if entry.outcome is Outcome.MISS:
            miss = codec.record_to_state(entry.record)
            miss["fingerprint"] = None
            stream["misses"].append([miss, entry.reprocessed_tokens, entry.ttl])

    def _miss_cost(
        self, misses: list[Any], used: dict[str, DayPrices]
    ) -> tuple[float | None, list[str]]:
        if not misses:
            return 0.0, []
        from cachediag.analysis.costs import miss_cost_usd

        total = 0.0
        unpriced: set[str] = set()
        for miss, reprocessed, ttl in misses:
            record = codec.record_from_state(miss)
            found = None if record.model is None else self._prices_of(record, used)
            if found is None:
                unpriced.add(record.model or "?")
                continue
            entry = LedgerEntry(0, record, Outcome.MISS, ttl, None, reprocessed)
            total += miss_cost_usd(entry, found)
        return (None if unpriced else total), sorted(unpriced)

    def _prices_of(self, record: RequestRecord, used: dict[str, DayPrices]) -> ModelPrices | None:
        """The prices of ``record``'s model at its instant: from the day's slots saved
        in the state, else looked up (once per model and UTC day). A saved entry that
        is damaged raises ``ValueError``: the state is then recomputed."""
        from cachediag.pricing.slots import DAY_S, day_prices_from_data

        assert record.model is not None
        day = int(record.at // DAY_S)
        key = f"{record.model}|{day}"
        found = used.get(key)
        if found is None:
            saved = self.prices.get(key)
            if saved is None:
                from cachediag.statusline import prices

                found = prices.day_prices(record.model, day)
            else:
                found = day_prices_from_data(saved)
            used[key] = found
        return found.at(record.at - day * DAY_S)

    def header(self, now: float) -> State:
        streams: dict[str, Any] = {}
        used: dict[str, DayPrices] = {}
        for sid, ledger in self.ledgers.items():
            s = self.streams.setdefault(sid, {"misses": [], "first_at": None})
            log = self.log.streams[sid]
            cost, unpriced = self._miss_cost(s["misses"], used)
            streams[sid] = {
                **s,
                "kind": log.kind.value,
                "source": log.source,
                "ledger": codec.ledger_to_state(ledger),
                "prompt_cache": prompt_cache_dict(build_prompt_cache(ledger, now)),
                "miss_cost_usd": cost,
                "unpriced_models": unpriced,
            }
        # Only the days this session's misses fell on: entries of an older layout
        # (per model) or of days no longer needed are not carried on.
        self.prices = {key: found.to_data() for key, found in used.items()}
        return {
            "transcript": self.transcript,
            "files": self.files,
            "streams": streams,
            "prices": self.prices,
            "skipped_lines": self.skipped,
            "unreadable": self.unreadable,
            "api_errors": self.api_errors + self.log.api_errors,
            "saved_at": now,
        }

    def readers_state(self) -> dict[str, Any]:
        return {path: codec.reader_to_state(r) for path, r in self.readers.items()}


def refresh(
    transcript: str,
    agents: list[str],
    header: State | None,
    rest: bytes,
    now: float,
    *,
    stop: Callable[[], bool] | None = None,
    on_problem: Callable[[str], None] | None = None,
) -> tuple[State, dict[str, Any]]:
    """Bring the state up to date with the files; returns the new header and readers.

    ``stop`` is asked between blocks: when it says so, what was read is kept, the header
    says ``partial``, and the next run goes on from there. An agent file that cannot be
    read costs only its own stream (it is listed as ``unreadable``); the main transcript
    that cannot be read raises ``OSError``. ``on_problem`` hears about each (one line for
    the log, never file content).
    """
    say = on_problem or (lambda message: None)
    files = [transcript, *agents]
    if header is not None:
        saved = header.get("files")
        if header.get("transcript") != transcript or not isinstance(saved, dict):
            say("state of another transcript or shape: recomputed")
            header = None
        elif not set(saved) <= set(files):
            say("an agent file vanished: state recomputed")  # its stream must go
            header = None
        else:
            changed = {p: change_of(p, saved[p]) for p in saved}
            changed = {p: why for p, why in changed.items() if why is not None}
            if changed:
                path, why = sorted(changed.items())[0]
                say(f"{_kind(path, transcript)} {why}: state recomputed")
                header = None
    try:
        session = Session(transcript, header, rest)
    except Exception as exc:  # a state we cannot use, whatever it raises: recompute
        say(f"state unusable, recomputed: {type(exc).__name__}")
        session = Session(transcript, None, b"")
    partial = False
    for path in files:
        if stop is not None and path != transcript and stop():
            partial = True  # the main transcript always gets a first block read
            break
        if unchanged_since(session.files.get(path), path):
            continue
        known = session.unreadable.get(path)
        if known is not None and known == file_signature(path):
            continue  # failed before and not changed since: not tried again
        try:
            finished = session.read(path, stop=stop)
        except OSError as exc:
            if path == transcript:
                raise
            session.unreadable[path] = file_signature(path) or {}
            say(f"agent file not read ({type(exc).__name__}: {exc.strerror or 'not regular'})")
            continue
        session.unreadable.pop(path, None)
        partial = partial or not finished
    # Every stream of the session has a ledger, even one that has no request yet.
    for sid in session.log.streams:
        session.ledgers.setdefault(sid, Ledger())
    header = session.header(now)
    header["partial"] = partial
    return header, session.readers_state()


def _kind(path: str, transcript: str) -> str:
    return "transcript" if path == transcript else "agent file"

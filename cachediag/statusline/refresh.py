"""One session's saved state, brought up to date with its transcript and agent files.

The warm path ends here when no file changed (the saved header is the answer) or when
the new bytes hold no request (positions move on); otherwise ``track`` (the reader and
the ledger) is loaded to read what was appended.
"""

from __future__ import annotations

import os
import time

from cachediag.statusline import state, view
from cachediag.statusline.log import describe, heard, log_failure, note

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from collections.abc import Callable
    from typing import Any


UNCHANGED = "unchanged since the last run"
"""``heard.facts["how"]`` of a warm run: no file of the session changed."""


def session_state(
    transcript: str,
    now: float,
    root: str | None = None,
    *,
    fresh: bool = False,
    deadline: float | None = None,
    whole_read: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """The session's state, brought up to date with the transcript and its agents;
    ``fresh`` ignores the saved state and replaces it. Reading stops at ``deadline``
    (``time.monotonic``); what was read is saved and the header says ``partial``.

    A state folder that is not this user's alone is not used at all (neither read nor
    written): the state is computed from the files and thrown away.
    """
    files = [transcript, *state.agent_files(transcript)]
    facts = heard.facts
    facts["agent_files"] = len(files) - 1
    try:
        path: str | None = os.path.join(
            state.state_dir(root), os.path.basename(state.state_path(transcript, root))
        )
    except OSError as exc:
        log_failure(f"state folder not used: {exc}")
        path = None
    facts["state"] = path
    header, rest, seen = None, b"", None
    if path is not None and not fresh:
        seen = state.stamp(path)  # before reading: a save after it shows
        try:
            header, rest = state.load_header(path)
        except state.BadState as exc:
            note(f"{exc}; recomputed")
    if path is not None and header is not None and header.get("transcript") == transcript:
        if state.unchanged(header, files):
            facts["how"] = UNCHANGED
            return header
        moved = state.skip_request_free_appends(header, files)
        if moved is not None:
            facts["how"] = "appended lines hold no request: positions moved on"
            facts["saved"] = _save_moved(path, header, moved, rest, seen)
            return moved
    facts["how"] = "read from byte 0" if header is None else "read what was appended"
    if whole_read is not None and header is None:
        whole_read()  # before the reader loads: what reads beside it starts now
    from cachediag.statusline.track import encode_state, refresh

    def stop() -> bool:
        return deadline is not None and time.monotonic() > deadline

    with state.WriterLock(path) as may_write:
        again = path is not None and (header is None or state.stamp(path) != seen)
        if may_write and not fresh and again:
            assert path is not None
            try:  # a sibling may have saved meanwhile
                header, rest = state.load_header(path)
            except state.BadState:
                header, rest = None, b""
        header, readers = refresh(
            transcript, files[1:], header, rest, now, stop=stop, on_problem=_heard_from_track
        )
        facts["saved"] = False
        if may_write:
            assert path is not None
            try:
                state.save(path, *encode_state(header, readers))
                facts["saved"] = True
            except OSError as exc:
                log_failure(f"state not saved: {describe(exc)}")
            gone = state.sweep(os.path.dirname(path))
            if gone:
                note(f"housekeeping: state of {gone} vanished transcript(s) removed")
        elif path is not None:
            facts["saved"] = "another run holds the lock"
    return header


def _heard_from_track(message: str) -> None:
    """``track``'s reports: a file it could not read is a problem, a recompute is not."""
    log_failure(message, problem=message.startswith("agent file not read"))


def _save_moved(
    path: str, based_on: dict[str, Any], moved: dict[str, Any], rest: bytes, seen: object
) -> bool:
    """Save new file positions, unless a sibling saved another state meanwhile (then its
    state, at least as far along, is kept); True when saved. ``seen``: the file's
    ``stamp`` when ``based_on`` was read (the same: not parsed again)."""
    import json

    with state.WriterLock(path) as may_write:
        if not may_write:
            return False
        try:
            if state.stamp(path) != seen and state.load_header(path)[0] != based_on:
                return False
            state.save(path, json.dumps(moved, separators=(",", ":")).encode(), rest.strip())
        except (OSError, ValueError) as exc:
            log_failure(f"state not saved: {describe(exc)}")
            return False
    return True


def transcript_view(
    transcript: str,
    now: float,
    root: str | None,
    deadline: float | None,
    whole_read: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """The session's numbers from its files; any defect of the saved state, whatever it
    raises, means: recompute once from the files (and one line in the log). ``whole_read``
    is called when the files are about to be read from their first byte."""
    try:
        state_now = session_state(transcript, now, root, deadline=deadline, whole_read=whole_read)
        return view.session_view(state_now, now)
    except OSError:
        if not os.access(transcript, os.R_OK):
            raise  # the transcript itself: a fresh start would fail the same way
        exc_info: BaseException | None = None
    except Exception as exc:
        exc_info = exc
    note("state unusable, recomputed" + (f": {describe(exc_info)}" if exc_info else ""))
    fresh = session_state(
        transcript, now, root, fresh=True, deadline=deadline, whole_read=whole_read
    )
    return view.session_view(fresh, now)

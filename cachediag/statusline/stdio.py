"""The status line's own streams: Claude Code's object read from stdin, the fallback
printed when no line could be made, and the messages a person at a terminal sees on
stderr (Claude Code pipes stderr and shows none of it). Standard library only: the warm
path imports it.
"""

from __future__ import annotations

from cachediag.statusline import jsonlite, render
from cachediag.statusline.log import heard, log_failure

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at run time; the warm path avoids it
    from typing import IO, Any

MAX_STDIN_BYTES = 16 << 20
"""Claude Code's object is a few KB; more than this is not it (and is not read whole)."""


def parse_payload(raw: bytes) -> Any:
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


def isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def tell(err: IO[str], message: str) -> None:
    _say(err, "cachediag statusline: ", message)


def error(err: IO[str], message: str) -> None:
    _say(err, "Error: ", message)


def _say(err: IO[str], prefix: str, message: str) -> None:
    """One printable line on stderr; a closed or broken stderr is no failure of the line."""
    try:
        err.write(f"{prefix}{render.printable(message, 300)}\n")
        err.flush()
    except (OSError, ValueError):
        pass


def fallback(as_json: bool, reason: str) -> str:
    """What is printed when no line could be made: the line's own fallback, or a
    ``--json`` object that says so."""
    if as_json:
        import json

        return json.dumps({"prompt_cache": None, "cachediag": {"version": 1, "error": reason}})
    return render.FALLBACK

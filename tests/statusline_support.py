"""Helpers of the status line tests: transcript lines, one run in process, the state."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cachediag.pricing.slots import DayPrices
from cachediag.statusline import fast, prices, state

T0 = 1_770_000_000.0


def assistant(n: int, at: float, *, inp: int, read: int, write: int, model: str = "m-1") -> str:
    """One transcript line of one API response (formats.md §1)."""
    iso = datetime.fromtimestamp(at, UTC)
    return json.dumps(
        {
            "type": "assistant",
            "uuid": f"u{n}",
            "sessionId": "s1",
            "timestamp": iso.isoformat().replace("+00:00", "Z"),
            "requestId": f"req_{n}",
            "message": {
                "id": f"msg_{n}",
                "model": model,
                "content": [{"type": "text", "text": "SECRET-PROMPT-TEXT"}],
                "usage": {
                    "input_tokens": inp,
                    "cache_read_input_tokens": read,
                    "cache_creation_input_tokens": write,
                    "cache_creation": {"ephemeral_5m_input_tokens": write},
                    "output_tokens": 5,
                },
            },
        }
    )


# cold (20010 prompt), hit (20510), then 940 s idle > 5m TTL: a miss that rewrites it all.
THREE = [
    assistant(1, T0, inp=10, read=0, write=20000),
    assistant(2, T0 + 60, inp=10, read=20000, write=500),
    assistant(3, T0 + 1000, inp=10, read=0, write=21000),
]


def run_line(payload: Any, *args: str) -> str:
    out = io.StringIO()
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    assert fast.run(list(args), io.BytesIO(raw), out) == 0
    text = out.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1
    return text[:-1]


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    # Lines are fitted to the terminal's width: a narrow one running the tests must not
    # change what they read (width tests pass --width).
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(prices, "day_prices", lambda model, day: DayPrices())
    return home / "cachediag"


def write(path: Path, lines: list[str], mode: str = "w") -> None:
    with path.open(mode) as fp:
        fp.write("".join(line + "\n" for line in lines))


def state_of(t: Path, cache_home: Path) -> dict[str, Any]:
    header, _ = state.load_header(state.state_path(str(t), str(cache_home)))
    assert header is not None
    return header


def requests_seen(t: Path) -> int:
    obj = json.loads(run_line({"transcript_path": str(t)}, "--json"))
    return int(obj["prompt_cache"]["requests"])


REPORT_PEAK = (
    "import atexit,sys;from cachediag.entry import main;"
    "atexit.register(lambda: sys.stderr.write([l for l in open('/proc/self/status')"
    " if l.startswith('VmHWM')][0]));main()"
)
"""``python -c REPORT_PEAK ARGS...`` runs cachediag and writes its own peak memory
(``VmHWM``) to stderr: ``ru_maxrss`` would count the test process it was forked from,
which Linux carries across exec."""

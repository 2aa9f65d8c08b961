"""What the log showed about one miss, for ``advice.advice_for``.

The Claude Code version is on every transcript line (``"version":"2.1.332"``) but the
reader keeps no field for it, so ``read_client_version`` looks at the session's main file
itself: its last 64 KiB (the version in force when the session ended; a session resumed
after an update runs the newer one), else its first. It is the one function here that
reads a file, and reads only those bytes; the rest is pure.
"""

from __future__ import annotations

import re

from cachediag.analysis.advice import Advice, AdviceContext, advice_for
from cachediag.analysis.ledger import LedgerEntry, Outcome
from cachediag.analysis.session_analysis import SessionAnalysis, StreamAnalysis
from cachediag.ingest.agents import agent_of

_VERSION = re.compile(rb'"version":"(\d+\.\d+\.\d+)[^"]{0,20}"')
_WINDOW = 64 * 1024


def version_in(data: bytes) -> str | None:
    """The last Claude Code version named in ``data``."""
    found = _VERSION.findall(data)
    return found[-1].decode("ascii") if found else None


def read_client_version(path: str | None) -> str | None:
    """The Claude Code version a transcript names (``None``: none, or not readable)."""
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(_WINDOW)
            f.seek(0, 2)
            size = f.tell()
            tail = b""
            if size > _WINDOW:
                f.seek(size - _WINDOW)
                tail = f.read(_WINDOW)
    except OSError:
        return None
    return version_in(tail) or version_in(head)


def resumed(analysis: SessionAnalysis) -> bool | None:
    """True when the session's file repeats an earlier session's responses: Claude Code
    copied that history into a new file when it was resumed (``replayed_responses``).
    ``None`` otherwise: a resume that continues the same file leaves no such mark."""
    return True if analysis.log.replayed_responses > 0 else None


def session_version(analysis: SessionAnalysis) -> str | None:
    """The version of a session read from a Claude Code transcript (else ``None``)."""
    if not analysis.log.format.startswith("claude-code"):
        return None
    return read_client_version(analysis.log.source)


def context_for(
    stream: StreamAnalysis, entry: LedgerEntry, version: str | None, resumed: bool | None = None
) -> AdviceContext:
    """Everything the log says about this miss that the advice can use."""
    fp = entry.record.fingerprint
    evidence = entry.evidence
    return AdviceContext(
        version=version,
        ttl_in_force=evidence.ttl_in_force if evidence is not None else entry.ttl,
        stream_kind=str(stream.log.kind),
        defer_loading=fp.defer_loading if fp is not None else None,
        resumed=resumed,
    )


def advice_for_entry(
    stream: StreamAnalysis, entry: LedgerEntry, version: str | None, resumed: bool | None = None
) -> list[Advice]:
    """The advice for each cause of one miss, in the diagnosis's order (none for a hit
    or an announced rebuild)."""
    d = entry.diagnosis
    if d is None:
        return []
    ctx = context_for(stream, entry, version, resumed)
    return [advice_for(str(c), ctx) for c in dict.fromkeys(d.causes)]


def advises(analysis: SessionAnalysis) -> bool:
    """Whether the advice (written for Claude Code and the Anthropic API) fits the log:
    not another agent's (``ingest.agents.agent_of``), whose settings and habits differ;
    opencode's rows in either provider's form included."""
    return agent_of(analysis.log.format) == "claude"


def stream_advice(
    stream: StreamAnalysis, version: str | None, resumed: bool | None = None
) -> list[tuple[Advice, int]]:
    """Each cause of the stream's misses with how many misses it named, commonest first;
    the advice fitted to the last miss it named (the most recent state of the session)."""
    last: dict[str, LedgerEntry] = {}
    counts: dict[str, int] = {}
    for entry in stream.entries:
        if entry.outcome is not Outcome.MISS or entry.diagnosis is None:
            continue
        for cause in dict.fromkeys(entry.diagnosis.causes):
            counts[cause] = counts.get(cause, 0) + 1
            last[cause] = entry
    ranked = sorted(counts, key=lambda c: (-counts[c], c))
    return [
        (advice_for(c, context_for(stream, last[c], version, resumed)), counts[c]) for c in ranked
    ]

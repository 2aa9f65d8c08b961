"""Separating a capture into conversations (formats.md §2).

A capture interleaves the main thread, subagents and small side calls. A request joins
the conversation whose latest request it continues: the one sharing the most messages at
the same positions, so that a rewrite of an earlier message (even the first) stays inside
its conversation and is reported as the miss cause it is. A request that shares messages
but neither the system prompt, the tool list nor the first message comes from another
agent; when it shares most of a conversation it is a fork of it, such as the
compaction agent summarising that conversation. A request that starts over with the
forked conversation's system prompt and tools right after such a fork is that
conversation going on after compaction: an announced rebuild, not a new stream.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from cachediag.model import (
    MAIN_STREAM,
    BlockPrint,
    Fingerprint,
    RebuildAnnounced,
    RebuildKind,
    RequestRecord,
    StreamItem,
    StreamKind,
)

FORK_MIN_SHARED = 2


@dataclass(slots=True, eq=False)
class Thread:
    """One conversation being assembled; compared by identity, never by value."""

    first_seen: int
    last: Fingerprint
    items: list[StreamItem] = field(default_factory=list)
    prompt_tokens: int = 0
    forked_from: Thread | None = None
    fork_at: float | None = None
    """When another agent last forked this conversation (a compaction, most likely)."""
    last_record: RequestRecord | None = None
    before_last: Fingerprint | None = None
    """The fingerprint of the request before ``last``: what the conversation looked like
    if its latest request turns out to have been the call that compacted it."""


def _shared_positions(before: tuple[str, ...], after: tuple[str, ...]) -> int:
    return sum(1 for a, b in zip(before, after, strict=False) if a == b)


def continuation_score(last: Fingerprint, cur: Fingerprint) -> tuple[int, int] | None:
    """How strongly ``cur`` continues the conversation whose latest request is ``last``."""
    before, after = last.message_hashes or (), cur.message_hashes or ()
    shared = _shared_positions(before, after)
    if shared == 0:
        return None
    same = int(last.system_hashes == cur.system_hashes) + int(last.tools == cur.tools)
    first_same = before[0] == after[0]
    if same == 0 and not first_same:
        return None
    # Another agent quoting one message is not a continuation; a new system prompt and
    # tool list on a conversation that goes on is (a multi-cause miss), even when only its
    # first message is left as it was: Claude Code rewrites the trailing ``system``
    # message of every request, so a second turn shares just the first (2.1.260 resumed
    # with a new prompt and tools).
    if same == 0 and shared < 2 and not (first_same and len(after) > len(before)):
        return None
    return shared, same


INDEXED_POSITIONS = 3
"""Threads are found by their latest messages at these first positions: a request shares
one of them with the conversation it continues unless all were rewritten at once."""


def _fork_parent(candidates: Iterable[Thread], fp: Fingerprint) -> Thread | None:
    after = fp.message_hashes or ()
    best: Thread | None = None
    best_shared = 0
    for thread in candidates:
        before = thread.last.message_hashes or ()
        shared = _shared_positions(before, after)
        if shared >= FORK_MIN_SHARED and 2 * shared >= len(before) and shared > best_shared:
            best, best_shared = thread, shared
    return best


def _resumed_after_fork(forked: list[Thread], fp: Fingerprint) -> Thread | None:
    for thread in reversed(forked):
        last = thread.last
        if (
            thread.fork_at is not None
            and last.system_hashes == fp.system_hashes
            and last.tools == fp.tools
            and last.model == fp.model
        ):
            return thread
    return None


SYSTEM_SHARE_SAME_AGENT = 0.9
"""Share of the system prompt's characters two requests must have in common to be the same
agent when some block differs: Claude Code's first block (the billing header) can change
after a compaction, while a subagent's own prompt is most of its system text."""
RECENT_THREADS = 4
"""Conversations, most recently active first, that a compaction can have come from."""


def _system_alike(a: Fingerprint, b: Fingerprint) -> bool:
    if a.system_hashes == b.system_hashes:
        return True
    if a.system_blocks is None or b.system_blocks is None:
        return False
    mine = {bp.hash: bp.chars for bp in a.system_blocks}
    shared = sum(bp.chars for bp in b.system_blocks if bp.hash in mine)
    total = max(sum(mine.values()), sum(bp.chars for bp in b.system_blocks))
    return total > 0 and shared >= SYSTEM_SHARE_SAME_AGENT * total


def same_agent(a: Fingerprint, b: Fingerprint) -> bool:
    """Same model, tools and (all but a small block of) system prompt: the same agent,
    whatever its messages."""
    return a.model == b.model and a.tools == b.tools and _system_alike(a, b)


def _conversation_part(
    fp: Fingerprint,
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[BlockPrint, ...], ...] | None]:
    """Message hashes, roles and blocks without the trailing ``system``-role messages
    Claude Code (2.1.2xx+) appends to every request and rewrites on the next one."""
    hashes, roles = fp.message_hashes or (), fp.message_roles or ()
    n = len(hashes)
    if len(roles) == n:
        while n and roles[n - 1] == "system":
            n -= 1
    blocks = fp.message_blocks
    kept = blocks[:n] if blocks is not None and len(blocks) == len(hashes) else None
    return hashes[:n], roles[:n], kept


def asks_to_summarise(before: Fingerprint, last: Fingerprint) -> bool:
    """``last`` is ``before``'s conversation with a request of text added at its end: the
    shape of a compaction call. Claude Code appends its summary request to the messages it
    last sent, either merged into their final user message (2.1.260 and 2.1.332: after the
    tool results, without the answer to them) or as a user message of its own."""
    prior, _, was = _conversation_part(before)
    after, roles, blocks = _conversation_part(last)
    if not prior or len(after) < len(prior) or not roles or roles[-1] != "user":
        return False
    final = blocks[-1] if blocks is not None else None
    if final is not None and (not final or final[-1].type != "text"):
        return False
    if len(after) > len(prior):
        return after[: len(prior)] == prior
    if after[:-1] != prior[:-1] or after[-1] == prior[-1]:
        return False
    # Merged: the final message is the one sent before, plus text blocks.
    if final is None or was is None:
        return True
    kept = was[-1]
    extra = final[len(kept) :]
    # Content, not markup: the breakpoint that sat on the old final block has moved on.
    same = [bp.hash for bp in final[: len(kept)]] == [bp.hash for bp in kept]
    return same and bool(extra) and all(bp.type == "text" for bp in extra)


FIRST_MESSAGE_MIN_BLOCKS = 2
"""Content blocks a conversation's first message must have to be recognised inside a
reshaped one (a lone block, such as the bare prompt, may be quoted by a side call)."""


def _contains_run(outer: list[str], inner: list[str]) -> bool:
    n = len(inner)
    return any(outer[i : i + n] == inner for i in range(len(outer) - n + 1))


def _reshaped_from(recent: list[Thread], fp: Fingerprint) -> Thread | None:
    """The conversation ``fp`` goes on with although no message stayed in place: its first
    message holds the whole first message of the conversation's latest request, with
    more around it. Claude Code does this on a model switch (the context it sent as a
    trailing ``system`` message to one model is folded into the first user message for
    another, so every later position moves)."""
    cur = fp.message_blocks
    if cur is None or not cur or len(cur) < 2:
        return None
    outer = [bp.hash for bp in cur[0]]
    for thread in recent:
        last = thread.last.message_blocks
        if not last or len(last[0]) < FIRST_MESSAGE_MIN_BLOCKS or len(cur[0]) <= len(last[0]):
            continue
        if _contains_run(outer, [bp.hash for bp in last[0]]):
            return thread
    return None


def _compacted_by_last(recent: list[Thread], fp: Fingerprint) -> Thread | None:
    """The conversation that ``fp`` goes on with after compaction, if any.

    ``fp`` continues no conversation's messages. When the latest request of a recent one
    asked, in the conversation's own frame, for a summary of it (``asks_to_summarise``),
    and ``fp`` is the same agent starting over from fewer messages (the summary, then the
    new prompt), that request was the compaction call: seen from the request log alone,
    with no transcript's boundary line and no hint header to say so.
    """
    after = fp.message_hashes or ()
    for thread in recent:
        before, last = thread.before_last, thread.last
        if thread.last_record is None or before is None or thread.forked_from is not None:
            continue
        if not after or len(after) >= len(last.message_hashes or ()):
            continue
        if _shared_positions(last.message_hashes or (), after):
            continue
        if asks_to_summarise(before, last) and (same_agent(before, fp) or same_agent(last, fp)):
            return thread
    return None


def _split_off_compaction(thread: Thread, threads: list[Thread], index: _Index) -> None:
    """Move ``thread``'s latest request into a compaction stream of its own and announce
    the rebuild it caused; the conversation is again as it was before that call."""
    record, before = thread.last_record, thread.before_last
    assert record is not None and before is not None
    popped = thread.items.pop()
    assert popped is record
    thread.prompt_tokens -= record.total_tokens
    call = Thread(
        first_seen=len(threads),
        last=thread.last,
        items=[record],
        prompt_tokens=record.total_tokens,
        forked_from=thread,
        last_record=record,
    )
    threads.append(call)
    index.move(thread, thread.last, before)
    index.move(call, None, call.last)
    thread.last, thread.before_last, thread.last_record = before, None, None
    thread.items.append(RebuildAnnounced(record.at, RebuildKind.COMPACTION))


@dataclass(slots=True)
class _Index:
    """Threads by (position, message hash) of their latest request, so that a capture
    with thousands of one-off side calls is not compared with every one of them."""

    by_key: dict[tuple[int, str], list[Thread]] = field(default_factory=dict)

    def candidates(self, fp: Fingerprint) -> list[Thread]:
        found: dict[int, Thread] = {}
        for key in enumerate((fp.message_hashes or ())[:INDEXED_POSITIONS]):
            for thread in self.by_key.get(key, ()):
                found[thread.first_seen] = thread
        return list(found.values())

    def move(self, thread: Thread, old: Fingerprint | None, new: Fingerprint) -> None:
        if old is not None:
            for key in enumerate((old.message_hashes or ())[:INDEXED_POSITIONS]):
                bucket = self.by_key.get(key)
                if bucket is not None and thread in bucket:
                    bucket.remove(thread)
        for key in enumerate((new.message_hashes or ())[:INDEXED_POSITIONS]):
            self.by_key.setdefault(key, []).append(thread)


def split_threads(
    records: Iterable[RequestRecord], links: Mapping[str, str] | None = None
) -> list[Thread]:
    """Group requests (in the order they were sent) into conversations.

    ``links`` maps a request's response id to the earlier response it names as its
    baseline (OpenAI's ``comparison_response_id`` or ``previous_response_id``): the
    request's own word on which conversation it continues, kept even when its input
    was compacted into something no message hash can follow.
    """
    threads: list[Thread] = []
    forked: list[Thread] = []
    recent: list[Thread] = []  # most recently continued first
    index = _Index()
    by_response: dict[str, Thread] = {}
    for record in records:
        fp = record.fingerprint
        best: Thread | None = None
        best_key: tuple[bool, int, int, int] | None = None
        candidates = index.candidates(fp) if fp is not None and fp.message_hashes else []
        if links is not None and record.message_id is not None:
            named = links.get(record.message_id)
            best = None if named is None else by_response.get(named)
        for thread in candidates if best is None else ():
            assert fp is not None
            score = continuation_score(thread.last, fp)
            if score is None:
                continue
            # A conversation that cur extends whole beats one it merely resembles:
            # parallel subagents can share identical tool turns at the same places.
            extends = score[0] == len(thread.last.message_hashes or ())
            key = (extends, score[0], score[1], thread.first_seen)
            if best_key is None or key > best_key:
                best, best_key = thread, key
        if best is None and fp is not None:
            best = _resumed_after_fork(forked, fp)
            if best is not None and best.fork_at is not None:
                best.items.append(RebuildAnnounced(best.fork_at, RebuildKind.COMPACTION))
        if best is None and fp is not None:
            best = _compacted_by_last(recent, fp)
            if best is not None:
                _split_off_compaction(best, threads, index)
            else:
                best = _reshaped_from(recent, fp)
        if best is None:
            best = Thread(first_seen=len(threads), last=fp or Fingerprint())
            if fp is not None:
                best.forked_from = _fork_parent(candidates, fp)
                if best.forked_from is not None:
                    best.forked_from.fork_at = record.at
                    forked.append(best.forked_from)
            threads.append(best)
            old = None
        else:
            old = best.last
        best.fork_at = None
        if links is not None and record.message_id is not None:
            by_response[record.message_id] = best
        best.items.append(record)
        best.prompt_tokens += record.total_tokens
        best.before_last = old if old is not None and old.message_hashes else None
        best.last_record = record
        if fp is not None:
            best.last = fp
            index.move(best, old, fp)
        if best in recent:
            recent.remove(best)
        recent.insert(0, best)
        del recent[RECENT_THREADS:]
    return threads


def name_threads(threads: list[Thread]) -> list[tuple[str, StreamKind, list[StreamItem]]]:
    """Stream ids and kinds: the main thread carries the most prompt tokens.

    Counting requests instead would crown a run of identical one-message quota checks.
    """
    if not threads:
        return []
    main = max(threads, key=lambda t: (t.prompt_tokens, -t.first_seen))
    main_model = main.last.model
    out: list[tuple[str, StreamKind, list[StreamItem]]] = []
    counters = {StreamKind.SUBAGENT: 0, StreamKind.SIDE_CALL: 0, StreamKind.COMPACTION: 0}
    for thread in threads:
        if thread is main:
            kind, stream_id = StreamKind.MAIN, MAIN_STREAM
        else:
            if thread.forked_from is not None:
                kind = StreamKind.COMPACTION
            elif thread.last.tools and thread.last.model == main_model:
                kind = StreamKind.SUBAGENT
            else:
                kind = StreamKind.SIDE_CALL
            counters[kind] += 1
            stream_id = f"{kind.value.replace('_', '-')}-{counters[kind]}"
        items = [dataclasses.replace(i, stream=stream_id) for i in thread.items]
        out.append((stream_id, kind, items))
    return out

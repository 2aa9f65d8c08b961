"""OpenAI-shaped responses (formats.md §3, §7): usage, the server's own cache diagnostics,
the TTL in force, and what a router (OpenRouter) adds: who served it and what it cost.

OpenAI counts cached tokens *inside* the prompt (Anthropic's ``input_tokens`` excludes
them); ``cache_write_tokens`` appears from GPT-5.6 on, and on OpenRouter.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from cachediag.ingest.anthropic import token_count
from cachediag.ingest.jsonl import BadLine, JsonObject
from cachediag.model import RequestRecord, ServerReason, Ttl

_DIAGNOSTIC_HIT = "cache_hit"
_DIAGNOSTIC_MISS = "cache_miss"
_TTLS: dict[str, Ttl] = {"5m": "5m", "30m": "30m", "1h": "1h", "24h": "24h"}
_GPT = re.compile(r"(?:^|/)gpt-(\d+)(?:\.(\d+))?")


def is_openai_usage(usage: JsonObject) -> bool:
    return "prompt_tokens" in usage or "input_tokens_details" in usage


def plain_record(
    at: float, line: int, model: str | None, *, prompt: int, read: int, written: int, output: int
) -> RequestRecord:
    """A record from a provider whose prompt count includes what was read and written."""
    if read + written > prompt:
        raise BadLine("cached tokens exceed the prompt count")
    return RequestRecord(
        at=at,
        input_tokens=prompt - read - written,
        cache_read_tokens=read,
        cache_creation_tokens=written,
        output_tokens=output,
        model=model,
        line=line,
    )


def openai_record(usage: JsonObject, at: float, line: int, model: str | None) -> RequestRecord:
    """Chat Completions (``prompt_tokens``) or Responses (``input_tokens``) usage."""
    if "prompt_tokens" in usage:
        prompt = token_count(usage, "prompt_tokens") or 0
        details = usage.get("prompt_tokens_details")
        output = token_count(usage, "completion_tokens") or 0
    else:
        prompt = token_count(usage, "input_tokens") or 0
        details = usage.get("input_tokens_details")
        output = token_count(usage, "output_tokens") or 0
    details = details if isinstance(details, dict) else {}
    written = token_count(details, "cache_write_tokens", None)
    if written is None:
        written = token_count(usage, "cache_write_tokens") or 0
    read = token_count(details, "cached_tokens") or 0
    return plain_record(at, line, model, prompt=prompt, read=read, written=written, output=output)


def diagnostics_reason(message: JsonObject) -> ServerReason | None:
    """``prompt_cache_diagnostics`` of a Responses object as a server reason.

    ``cache_hit`` is the server's "no divergence" (type ``None``, as Anthropic's
    ``diagnostics: null``); a ``cache_miss`` carries its ``reason``; the other types
    (``comparison_response_not_found``, ``unavailable``) are kept as they are: the
    server could not compare, so the cause is left to the bodies and the clock.
    """
    diagnostics = message.get("prompt_cache_diagnostics")
    if not isinstance(diagnostics, dict):
        return None
    kind = diagnostics.get("type")
    if not isinstance(kind, str):
        return None
    if kind == _DIAGNOSTIC_HIT:
        return ServerReason(type=None)
    reason = diagnostics.get("reason") if kind == _DIAGNOSTIC_MISS else kind
    if not isinstance(reason, str) or not reason:
        # A miss without a reason says only that the prefix was not reused.
        reason = kind
    missed = diagnostics.get("cache_missed_tokens")
    reusable = diagnostics.get("comparison_reusable_tokens")
    return ServerReason(
        type=reason,
        missed_tokens=missed if type(missed) is int else None,
        reusable_tokens=reusable if type(reusable) is int else None,
    )


def _diagnostics_era(model: str | None) -> bool:
    """GPT-5.6 and later: prompt-cache options with a 30-minute default TTL."""
    found = _GPT.search(model or "")
    if found is None:
        return False
    major, minor = int(found.group(1)), int(found.group(2) or 0)
    return major > 5 or (major == 5 and minor >= 6)


def openai_ttl(*holders: Any, model: str | None) -> Ttl:
    """The TTL in force for a request, from its body or the response that echoes it.

    ``prompt_cache_options.ttl`` (GPT-5.6+, default and only value ``30m``) supersedes
    ``prompt_cache_retention`` (earlier models: ``24h``, or in-memory, which keeps a
    prefix 5-10 minutes: the lower bound, ``5m``, is what can be relied on). The first
    holder that says anything decides.
    """
    for holder in holders:
        if not isinstance(holder, dict):
            continue
        options = holder.get("prompt_cache_options")
        if isinstance(options, dict):
            ttl = options.get("ttl")
            return _TTLS.get(ttl, "30m") if isinstance(ttl, str) else "30m"
        retention = holder.get("prompt_cache_retention")
        if isinstance(retention, str):
            if retention == "24h":
                return "24h"
            return "30m" if _diagnostics_era(model) else "5m"
    return "30m" if _diagnostics_era(model) else "5m"


def _cost(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    cost = float(value)
    return cost if math.isfinite(cost) and cost >= 0 else None


def reported_cost_usd(usage: JsonObject) -> float | None:
    """OpenRouter's ``usage.cost`` (credits, 1 credit = 1 USD). A bring-your-own-key
    request is billed by the upstream provider too: ``cost`` is then OpenRouter's fee
    and ``cost_details.upstream_inference_cost`` the provider's bill."""
    cost = _cost(usage.get("cost"))
    details = usage.get("cost_details")
    upstream = _cost(details.get("upstream_inference_cost")) if isinstance(details, dict) else None
    if upstream is not None and (usage.get("is_byok") is True or cost is None):
        return upstream + (cost or 0.0)
    return cost


def provider_of(message: JsonObject) -> str | None:
    """The provider a router served the request from (OpenRouter's ``provider``)."""
    provider = message.get("provider")
    return provider if isinstance(provider, str) and provider else None


def response_record(
    message: JsonObject,
    usage: JsonObject,
    at: float,
    line: int,
    *,
    request: JsonObject | None = None,
) -> RequestRecord:
    """The whole record of one OpenAI-shaped response: usage, TTL, server diagnostics,
    and a router's provider and cost. ``request`` is the body, when the log has it."""
    model = message.get("model")
    if not isinstance(model, str) and request is not None:
        model = request.get("model")
    model = model if isinstance(model, str) else None
    record = openai_record(usage, at, line, model)
    msg_id = message.get("id")
    return dataclasses.replace(
        record,
        # The response echoes what was applied; the request says what was asked.
        ttl=openai_ttl(message, request, model=model),
        message_id=msg_id if isinstance(msg_id, str) else None,
        server_reason=diagnostics_reason(message),
        provider=provider_of(message),
        reported_cost_usd=reported_cost_usd(usage),
    )


_RESPONSE_DONE = frozenset({"response.completed", "response.incomplete", "response.failed"})


def is_stream_part(obj: JsonObject) -> bool:
    """An OpenAI streaming event logged on its own line that carries no usage: a Responses
    event before ``response.completed``, or a Chat Completions chunk before the last."""
    kind = obj.get("type")
    if isinstance(kind, str) and kind.startswith("response.") and kind not in _RESPONSE_DONE:
        return True
    return obj.get("object") == "chat.completion.chunk" and not isinstance(obj.get("usage"), dict)


def parse_openai_sse(text: str) -> tuple[JsonObject, bool] | None:
    """The final response of an OpenAI event stream and whether it ended properly, or
    ``None`` when the text is not one.

    Responses streams end with ``response.completed`` carrying the whole response;
    Chat Completions chunks carry the usage in a last chunk (when asked for), then
    ``data: [DONE]``.
    """
    from cachediag.ingest.jsonl import parse_line

    final: JsonObject | None = None
    chunk: JsonObject = {}
    finished = False
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            finished = True
            continue
        try:
            event = parse_line(data.encode())
        except BadLine:
            continue
        kind = event.get("type")
        if kind in _RESPONSE_DONE and isinstance(event.get("response"), dict):
            final, finished = event["response"], True
        elif event.get("object") == "chat.completion.chunk":
            # Later chunks override: the usage (and OpenRouter's provider) come last.
            chunk.update({k: v for k, v in event.items() if v is not None})
    if final is not None:
        return final, finished
    if chunk:
        return chunk, finished
    return None

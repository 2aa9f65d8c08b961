"""An OpenAI request body reduced to hashes, names, counts and lengths (prompt-cache.md §4).

Chat Completions (``messages``, ``reasoning_effort``, ``response_format``, ``verbosity``)
and Responses (``instructions``, ``input``, ``reasoning.effort``, ``text.format``,
``text.verbosity``) bodies map onto the same ``Fingerprint`` as Anthropic's, plus the
dimensions OpenAI's own diagnostics name: ``prompt_cache_key``, the text format,
verbosity and ``service_tier``. What never keeps a prefix from being reused is left out:
fields that only point at an earlier response (``previous_response_id``,
``prompt_cache_options.comparison_response_id``) differ on every request by design, and
sampling, length and transport settings are not part of the prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from cachediag.ingest.fingerprint import canonical_json, digest
from cachediag.model import Fingerprint

JsonObject = dict[str, Any]

_MARKUP = ("cache_control", "prompt_cache_breakpoint")
"""Breakpoint markers: where to cache, not what; they move as a conversation grows."""
_SYSTEM_ROLES = frozenset({"system", "developer"})
_OWN_FIELDS = frozenset(
    {
        "model",
        "instructions",
        "input",
        "messages",
        "tools",
        "reasoning_effort",
        "response_format",
        "verbosity",
        "service_tier",
        "prompt_cache_key",
    }
)
_NOT_IN_PREFIX = frozenset(
    {
        # pointers at an earlier response (or at the server-held conversation)
        "previous_response_id",
        "conversation",
        # sampling, length, output and transport settings
        "temperature",
        "top_p",
        "top_logprobs",
        "logprobs",
        "logit_bias",
        "seed",
        "stop",
        "n",
        "frequency_penalty",
        "presence_penalty",
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
        "stream",
        "stream_options",
        "background",
        "include",
        "store",
        "metadata",
        "user",
        "safety_identifier",
        "usage",
    }
)


def _strip_markup(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_markup(v) for k, v in value.items() if k not in _MARKUP}
    if isinstance(value, list):
        return [_strip_markup(v) for v in value]
    return value


def _hash(value: Any) -> str:
    raw = canonical_json(value)
    if any(f'"{key}"'.encode() in raw for key in _MARKUP):
        raw = canonical_json(_strip_markup(value))
    return digest(raw)


def _chars(value: Any) -> int:
    """Characters of text in a block (its JSON length when it is not plain text)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        content = value.get("content", value.get("text"))
        if isinstance(content, str):
            return len(content)
        if isinstance(content, list):
            return sum(_chars(part) for part in content)
    return len(canonical_json(_strip_markup(value)))


def _conversation(body: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    """(system blocks, messages): ``instructions`` and any leading system or developer
    messages are the system prompt; the rest is the conversation."""
    system: list[Any] = []
    instructions = body.get("instructions")
    if isinstance(instructions, list):
        system.extend(instructions)
    elif instructions is not None:
        system.append(instructions)
    items = body.get("messages")
    if not isinstance(items, list):
        items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        return system, []
    start = 0
    while (
        start < len(items)
        and isinstance(items[start], dict)
        and items[start].get("role") in _SYSTEM_ROLES
    ):
        start += 1
    return system + items[:start], items[start:]


def _role(item: Any) -> str:
    if not isinstance(item, dict):
        return "?"
    role = item.get("role", item.get("type"))
    return role if isinstance(role, str) else "?"


def _tools(body: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return ()
    out: list[tuple[str, str]] = []
    for i, tool in enumerate(tools):
        name: Any = None
        if isinstance(tool, dict):
            function = tool.get("function")
            name = tool.get("name")
            if name is None and isinstance(function, dict):
                name = function.get("name")
            if name is None:
                name = tool.get("type")  # built-in tools: web_search, file_search, ...
        out.append((name if isinstance(name, str) else f"#{i}", _hash(tool)))
    return tuple(out)


def _setting(value: Any, default: str) -> str:
    return default if value is None else str(value)


def _text_options(body: Mapping[str, Any]) -> tuple[Any, Any]:
    text = body.get("text")
    text = text if isinstance(text, dict) else {}
    fmt = text.get("format", body.get("response_format"))
    return fmt, text.get("verbosity", body.get("verbosity"))


def _text_format(fmt: Any) -> str:
    """The format's type, plus a hash of its schema when it has one."""
    if fmt is None:
        return "text"
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "text" and len(fmt) == 1:
        return "text"
    return f"{kind if isinstance(kind, str) else '?'}:{_hash(fmt)}"


def _effort(body: Mapping[str, Any]) -> str:
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort") is not None:
        return str(reasoning["effort"])
    return _setting(body.get("reasoning_effort"), "default")


def _extra(body: Mapping[str, Any]) -> str:
    rest: dict[str, Any] = {}
    for key, value in body.items():
        if key in _OWN_FIELDS or key in _NOT_IN_PREFIX:
            continue
        if isinstance(value, dict):
            if key == "reasoning":
                value = {k: v for k, v in value.items() if k != "effort"}
            elif key == "text":
                value = {k: v for k, v in value.items() if k not in ("format", "verbosity")}
            elif key == "prompt_cache_options":
                value = {k: v for k, v in value.items() if k != "comparison_response_id"}
            if not value:
                continue
        rest[key] = value
    return digest(canonical_json(rest))


def fingerprint_openai_request(body: Mapping[str, Any]) -> Fingerprint:
    """Everything OpenAI's cache depends on, from one Chat Completions or Responses body."""
    system, messages = _conversation(body)
    fmt, verbosity = _text_options(body)
    model = body.get("model")
    key = body.get("prompt_cache_key")
    return Fingerprint(
        model=model if isinstance(model, str) else None,
        system_hashes=tuple(_hash(b) for b in system),
        system_chars=sum(_chars(b) for b in system),
        tools=_tools(body),
        effort=_effort(body),
        extra_body_hash=_extra(body),
        message_hashes=tuple(_hash(m) for m in messages),
        message_roles=tuple(_role(m) for m in messages),
        prompt_cache_key="none" if key is None else digest(canonical_json(key)),
        text_format=_text_format(fmt),
        verbosity=_setting(verbosity, "default"),
        service_tier=_setting(body.get("service_tier"), "auto"),
    )


class ResponseChain:
    """Responses sent with ``previous_response_id`` carry only the new input: the server
    holds the rest. Each is given the whole conversation as hashes (the earlier request's
    messages, then that response's output as one entry), so that a chained conversation
    extends itself like any other and its requests stay in one stream."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def resolve(
        self, fp: Fingerprint, previous_id: str | None, response_id: str | None
    ) -> Fingerprint:
        hashes, roles = fp.message_hashes or (), fp.message_roles or ()
        if previous_id is not None:
            # A response from before the capture: its history is one opaque entry.
            before = self._seen.get(
                previous_id, ((_pointer("history", previous_id),), ("history",))
            )
            hashes = (*before[0], _pointer("output", previous_id), *hashes)
            roles = (*before[1], "assistant", *roles)
            fp = replace(fp, message_hashes=hashes, message_roles=roles)
        if response_id is not None:
            self._seen[response_id] = (hashes, roles)
        return fp


def _pointer(kind: str, response_id: str) -> str:
    return digest(f"{kind}:{response_id}".encode())

"""The capture proxy: forwards Anthropic API calls unchanged and records what caching needs.

A room of its own: ``server`` and ``forward`` relay, with ``guard``, ``refusals`` and
``request_body`` (aiohttp, the ``cachediag[proxy]`` extra, imported by these alone),
``recording`` turns each ``POST /v1/messages`` into one
normalised record line (fingerprints and usage, never text), ``logfiles`` keeps the daily
private log, and ``index`` joins those records to transcripts. It produces records like
any reader and imports nothing from ``cli`` or ``report``.
"""

from __future__ import annotations

from cachediag.errors import CachediagError

DEFAULT_LISTEN = "127.0.0.1:8787"
DEFAULT_UPSTREAM = "https://api.anthropic.com"
EXTRA_HINT = "pip install '.[proxy]' in cachediag's checkout (the proxy extra)"


def require_aiohttp() -> None:
    """Fail with the extra to install when aiohttp is missing, never a bare ImportError."""
    try:
        import aiohttp  # noqa: F401
    except ImportError as exc:
        raise CachediagError(
            f"the capture proxy needs aiohttp, which is not installed: {EXTRA_HINT}"
        ) from exc

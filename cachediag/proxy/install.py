"""``ANTHROPIC_BASE_URL`` in Claude Code's settings.json, so every session goes through
the proxy, and ``uninstall`` putting back what was there. The rules of any settings change
(backup, atomic, numbers, mode and links kept) live in ``claude_settings``, the memory of
the earlier value in ``settings_undo``; here only what to write, and when to refuse.
Standard library only: ``proxy install`` works without the proxy extra."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from urllib.parse import urlsplit

from cachediag.claude_settings import Edited
from cachediag.errors import CachediagError
from cachediag.settings_undo import MISSING, Undone, install_key, uninstall_key

ENV_KEY = "ANTHROPIC_BASE_URL"
_HOSTNAME = re.compile(
    r"(?=[A-Za-z0-9.-]{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?"
)
"""A DNS name in ASCII (letters, digits, hyphens; IDNA names in their xn-- form)."""


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (``127.0.0.0/8``, ``::1``)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def base_url(value: str, *, allow_remote: bool = False) -> str:
    """The URL (``http://HOST:PORT``) clients use for a proxy at ``--listen VALUE``:
    ``HOST:PORT`` or ``[IPv6]:PORT``, an empty host being 127.0.0.1, the port 1-65535,
    the host a loopback one unless ``allow_remote``."""
    shown = "".join(c if c.isprintable() and c.isascii() else "?" for c in value)[:100]
    usage = f"--listen {shown}: expected HOST:PORT, e.g. 127.0.0.1:8787 or [::1]:8787"
    if value.startswith("["):
        host, close, port_text = value[1:].partition("]:")
        try:
            ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.IPv6Address(host)
        except ValueError:
            ip = None
        if not close or ip is None or "%" in host:  # a zone id has no place in a URL here
            raise CachediagError(f"{usage} (an IPv6 address in brackets)")
        url_host = f"[{ip.compressed}]"
    else:
        host, sep, port_text = value.rpartition(":")
        if not sep or ":" in host:
            raise CachediagError(f"{usage} (an IPv6 address goes in brackets)" if sep else usage)
        host = host or "127.0.0.1"
        try:
            ip = ipaddress.IPv4Address(host)
        except ValueError:
            ip = None
        if ip is None and not _HOSTNAME.fullmatch(host):
            raise CachediagError(f"{usage} ({shown.rpartition(':')[0]} is not a host name)")
        url_host = host
    if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5):
        raise CachediagError(usage)
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise CachediagError(f"{usage} (the port is 1-65535)")
    if ip is not None and ip.is_unspecified:
        raise CachediagError(
            f"--listen {shown}: {ip} is where a proxy listens on every address, not one to "
            "connect to; give the address clients use, e.g. 127.0.0.1:8787"
        )
    if not allow_remote and not is_loopback(host):
        raise CachediagError(
            f"--listen {shown}: {host} is reachable from other machines; anyone who can "
            "reach it could send requests on the credentials your client attaches and read "
            "the answers. Pass --allow-remote if that is what you want."
        )
    return f"http://{url_host}:{port}"


def _is_ours(value: object) -> bool:
    """A URL this command writes for a loopback proxy (any port): an earlier install."""
    if not isinstance(value, str):
        return False
    try:
        url = urlsplit(value)
        port = url.port
    except ValueError:
        return False
    return (
        url.scheme == "http"
        and url.hostname is not None
        and is_loopback(url.hostname)
        and port is not None
        and url.path in ("", "/")
        and not (url.query or url.fragment or url.username or url.password)
    )


KEY = ("env", ENV_KEY)


def install_base_url(settings: Path, url: str, *, force: bool = False) -> Edited:
    def compute(current: object) -> object:
        if current == url:
            return None
        if current is not MISSING and not _is_ours(current) and not force:
            raise CachediagError(
                f"{settings} already sets env.{ENV_KEY} to another URL; pass --force to "
                "replace it (uninstall puts it back)"
            )
        return url

    return install_key(settings, KEY, compute, _is_ours)


def uninstall_base_url(settings: Path) -> Undone:
    """The ``ANTHROPIC_BASE_URL`` the user had before cachediag back, or none."""
    return uninstall_key(settings, KEY, _is_ours)

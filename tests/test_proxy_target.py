"""``proxy.target``: no request target, however hostile, moves a request off the upstream's
scheme, host and port; ``--upstream`` with credentials in it is refused; URLs are shown
redacted."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("yarl", reason="the proxy extra (aiohttp, with yarl) is not installed")

from yarl import URL

from cachediag.proxy.target import (
    BadTarget,
    BadUpstream,
    Origin,
    origin_form,
    parse_origin,
    redact_url,
    upstream_url,
)

PIECES = [
    "http://", "https:", "munity://x", "//", "/", "\\", "@", ":", ":9100", "%2f", "%2F",
    "%2e", "%2E", ".", "..", "%00", "%", "?", "#", "&", "=", "\u3002", "\uff0e", "\uff61",
    "xn--80ak6aa92e.com", "b\u00fccher.de", "evil.com", "127.0.0.2", "[::1]", "\r", "\n",
    "\r\nHost: evil.com\r\n", "\x00", " ", "\t", "a", "v1", "messages", "~", "+",
]  # fmt: skip

hostile = st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=12).map("".join)
origins = st.builds(
    Origin,
    scheme=st.sampled_from(["http", "https"]),
    host=st.sampled_from(["api.anthropic.com", "127.0.0.1", "::1", "gw.example", "xn--e1a.ru"]),
    port=st.none() | st.integers(1, 65535).filter(lambda p: p not in (80, 443)),
    prefix=st.sampled_from(["", "/prefix", "/a/b", "/%2Fx"]),
)


@given(origins, hostile, st.booleans())
def test_no_target_changes_scheme_host_or_port(origin: Origin, target: str, slash: bool) -> None:
    target = "/" + target if slash else target
    try:
        url = upstream_url(origin, target)
    except BadTarget:
        return
    # The URL's own fields, and the same URL read back by two parsers as a client would.
    text = str(url)
    again = URL(text, encoded=True)
    split = urlsplit(text)
    expected_port = origin.port or {"http": 80, "https": 443}[origin.scheme]
    for scheme, host, port in (
        (url.scheme, url.raw_host, url.port),
        (again.scheme, again.raw_host, again.port),
        (split.scheme, split.hostname, split.port or expected_port),
    ):
        assert (scheme, host, port) == (origin.scheme, origin.host, expected_port), text
    assert url.raw_path.startswith(origin.prefix + "/")
    assert not any(c in text for c in "\r\n\x00 \t#\\")
    # The target, exactly as written; a bare "?" (an empty query) is not written again.
    path, _, query = target.partition("?")
    assert url.raw_path_qs == origin.prefix + (target if query else path)


@given(hostile)
def test_a_target_not_starting_with_one_slash_is_refused(target: str) -> None:
    if target.startswith("/") and not target.startswith("//"):
        return
    with pytest.raises(BadTarget):
        origin_form(target)


@pytest.mark.parametrize(
    "target",
    ["/v1/messages", "/v1/messages?beta=true", "/v1/models?limit=5&after_id=a%2Fb",
     "/v1/x?ids[]=1|2", "/v1/messages/batches/b1", "/v1/a:b@c;d=e"],
)  # fmt: skip
def test_ordinary_targets_are_kept_as_written(target: str) -> None:
    origin = parse_origin("https://api.anthropic.com")
    assert upstream_url(origin, target).raw_path_qs == target
    gateway = parse_origin("http://127.0.0.1:9100/gw/")
    url = upstream_url(gateway, target)
    assert (url.host, url.port, url.raw_path_qs) == ("127.0.0.1", 9100, "/gw" + target)


@pytest.mark.parametrize(
    ("upstream", "says"),
    [
        ("http://user:PASS-SECRET@gw.example/prefix", "user name or password"),
        ("http://:PASS-SECRET@gw.example/", "user name or password"),
        ("https://gw.example/prefix?token=PASS-SECRET", "query or fragment"),
        ("https://gw.example/#PASS-SECRET", "query or fragment"),
        ("ftp://gw.example/", "expected an http(s) URL"),
        ("https://gw.example/a/../b", "not a plain /path"),
        ("https://g\u00fcw.example/", "non-ASCII"),
        ("https://gw.example:0/", "port 0"),
    ],
)
def test_upstreams_with_credentials_or_oddities_are_refused(upstream: str, says: str) -> None:
    with pytest.raises(BadUpstream) as caught:
        parse_origin(upstream)
    assert says in str(caught.value) and "SECRET" not in str(caught.value)


@given(st.text(max_size=40), st.text(max_size=20))
def test_redaction_never_shows_userinfo_query_or_fragment(secret: str, path: str) -> None:
    for shape in ("http://u:{s}@h/{p}", "https://h/{p}?t={s}", "http://h:8/{p}#{s}"):
        text = redact_url(shape.format(s="SECRET" + secret, p=path.replace("SECRET", "")))
        assert "SECRET" not in text
        assert all(" " <= c <= "~" for c in text)


def test_redaction_keeps_what_locates_the_upstream() -> None:
    assert redact_url("http://user:PASS@host:8/prefix?token=T#x") == "http://host:8/prefix"
    assert redact_url(URL("https://api.anthropic.com")) == "https://api.anthropic.com"


@pytest.mark.parametrize(
    "upstream",
    [
        "http://user:SECRETPW/x@host",
        "http://user:SECRET?PW@host",
        "http://user:SEC#RET@host",
        "http://[SECRET@host]/",
        "http://user:123/SECRET@host",
    ],
)
def test_an_upstream_that_does_not_parse_never_echoes_its_password(upstream: str) -> None:
    # urllib's exception text quotes the piece it choked on (the password); the error
    # gives a fixed reason instead.
    with pytest.raises(BadUpstream) as caught:
        parse_origin(upstream)
    assert "SEC" not in str(caught.value)


@given(
    st.sampled_from(["http://user:{s}@host", "http://u:{s}@h/p", "http://[{s}@host]/"]),
    st.text(max_size=20),
)
def test_no_refused_upstream_shows_its_password(shape: str, rest: str) -> None:
    with pytest.raises(BadUpstream) as caught:
        parse_origin(shape.format(s="SECRET" + rest.replace("SECRET", "")))
    assert "SECRET" not in str(caught.value)


def test_an_empty_query_is_dropped_and_nothing_else() -> None:
    """Found by the property above: yarl writes no bare "?"; the path and a real query
    stay as written."""
    origin = Origin("https", "api.anthropic.com", None, "")
    assert upstream_url(origin, "/v1/messages?").raw_path_qs == "/v1/messages"
    assert upstream_url(origin, "/?").raw_path_qs == "/"
    assert upstream_url(origin, "/v1/messages?beta=true").raw_path_qs == "/v1/messages?beta=true"

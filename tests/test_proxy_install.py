"""``cachediag proxy install``: only a real HOST:PORT is written, settings' numbers and
backups as ``claude_settings`` keeps them, and no proxy extra needed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner
from hypothesis import example, given
from hypothesis import strategies as st

from cachediag.cli import main
from cachediag.errors import CachediagError
from cachediag.proxy.install import base_url, is_loopback


def install(path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["proxy", "install", "--settings", str(path), *args])
    return result.exit_code, result.stdout, result.stderr


def written_url(path: Path) -> str:
    url = json.loads(path.read_text())["env"]["ANTHROPIC_BASE_URL"]
    assert isinstance(url, str)
    return url


@pytest.mark.parametrize(
    "listen",
    [
        "foo", "foo:", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
        "127.0.0.1:99999999999999999999", "127.0.0.1:+80", "127.0.0.1: 80", "127.0.0.1:८७८७",
        "::1:8787", "[::1]", "[::1]8787", "[::1]:x", "[nope]:80", "[fe80::1%eth0]:80",
        "a b:80", "ex\u00e4mple.com:80", "host/x:80", "user@127.0.0.1:80", "127.0.0.1:80/x",
        "0.0.0.0:8787", "[::]:8787", "example.com:8787", "192.168.1.5:80", "\x1b[31m:80",
    ],
)  # fmt: skip
def test_a_bad_listen_address_is_refused_and_nothing_written(tmp_path: Path, listen: str) -> None:
    path = tmp_path / "settings.json"
    code, out, err = install(path, "--listen", listen)
    assert code == 1 and out == ""
    [line] = err.splitlines()
    assert line.startswith("Error: --listen ") and "\x1b" not in line
    assert not path.exists()


@pytest.mark.parametrize(
    ("listen", "url"),
    [
        ("127.0.0.1:9000", "http://127.0.0.1:9000"),
        (":8787", "http://127.0.0.1:8787"),
        ("127.5.6.7:1", "http://127.5.6.7:1"),
        ("localhost:65535", "http://localhost:65535"),
        ("[::1]:8787", "http://[::1]:8787"),
        ("[0:0:0:0:0:0:0:1]:8787", "http://[::1]:8787"),
    ],
)
def test_a_loopback_listen_address_is_written_as_a_url(
    tmp_path: Path, listen: str, url: str
) -> None:
    path = tmp_path / "settings.json"
    code, out, _ = install(path, "--listen", listen)
    assert code == 0 and f"set to {url}" in out
    assert written_url(path) == url


def test_a_remote_address_needs_allow_remote(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    code, _, err = install(path, "--listen", "proxy.internal:8787")
    assert code == 1 and "--allow-remote" in err and not path.exists()
    code, _, _ = install(path, "--listen", "proxy.internal:8787", "--allow-remote")
    assert code == 0 and written_url(path) == "http://proxy.internal:8787"
    code, _, _ = install(path, "--listen", "[2001:db8::5]:80", "--allow-remote", "--force")
    assert code == 0 and written_url(path) == "http://[2001:db8::5]:80"


@given(st.text(max_size=40))
@example("127.0.0.1:8787@evil.example:80")
@example("127.0.0.1:80#@evil")
@example("[::1]:80]:81")
@example("localhost.:80")
def test_whatever_is_accepted_is_exactly_a_loopback_origin(listen: str) -> None:
    try:
        url = base_url(listen)
    except CachediagError:
        return
    parts = urlsplit(url)
    assert parts.scheme == "http" and parts.path == "" and not parts.query
    assert parts.username is None and not parts.fragment
    assert parts.hostname is not None and is_loopback(parts.hostname)
    assert parts.port is not None and 1 <= parts.port <= 65535
    assert url == f"http://{parts.netloc}"


def test_install_needs_no_proxy_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "aiohttp", None)
    path = tmp_path / "settings.json"
    code, _, err = install(path, "--listen", "127.0.0.1:9100")
    assert code == 0, err
    assert written_url(path) == "http://127.0.0.1:9100"


def test_settings_numbers_survive_an_install(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"cleanupPeriodDays": 1.0e400, "x": 0.10, "n": 12345678901234567890123}')
    path.chmod(0o644)
    code, _, err = install(path)
    assert code == 0, err
    text = path.read_text()
    assert '"cleanupPeriodDays": 1.0e400,' in text and '"x": 0.10,' in text
    assert '"n": 12345678901234567890123,' in text and "Infinity" not in text
    (backup,) = tmp_path.glob("settings.json.*.bak")
    assert (
        backup.read_text()
        == '{"cleanupPeriodDays": 1.0e400, "x": 0.10, "n": 12345678901234567890123}'
    )
    assert backup.stat().st_mode & 0o777 == 0o600 and path.stat().st_mode & 0o777 == 0o644


def test_an_earlier_install_on_any_loopback_address_is_ours(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    assert install(path, "--listen", "[::1]:8787")[0] == 0
    assert install(path, "--listen", "127.0.0.1:9000")[0] == 0  # no --force needed
    assert written_url(path) == "http://127.0.0.1:9000"
    # A loopback URL with a path is another local gateway's, not ours.
    path.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": "http://localhost:4000/v1"}}))
    code, _, err = install(path)
    assert code == 1 and "--force" in err
    assert written_url(path) == "http://localhost:4000/v1"

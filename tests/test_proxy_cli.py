"""``cachediag proxy`` as users run it, and ``cachediag proxy install``."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cachediag.cli import main


def test_a_remote_listen_address_needs_allow_remote() -> None:
    result = CliRunner().invoke(main, ["proxy", "--listen", "0.0.0.0:8787"])
    assert result.exit_code == 1
    assert "--allow-remote" in result.stderr and "other machines" in result.stderr


def test_bad_listen_and_upstream_are_usage_errors() -> None:
    runner = CliRunner()
    assert "expected HOST:PORT" in runner.invoke(main, ["proxy", "--listen", "nope"]).stderr
    bad = runner.invoke(main, ["proxy", "--upstream", "ftp://x"]).stderr
    assert "expected an http(s) URL" in bad


def test_missing_aiohttp_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "aiohttp", None)
    result = CliRunner().invoke(main, ["proxy"])
    assert result.exit_code == 1
    assert "pip install '.[proxy]' in cachediag's checkout (the proxy extra)" in result.stderr


def test_help_shows_the_two_line_setup() -> None:
    out = CliRunner().invoke(main, ["proxy", "--help"]).output
    assert "cachediag proxy &" in out and "cachediag proxy install" in out


def test_help_shows_each_limit_with_its_default() -> None:
    from cachediag.proxy.limits import LIMITS, default_of

    out = " ".join(CliRunner().invoke(main, ["proxy", "--help"]).output.split())
    for option in LIMITS:
        assert option.flag in out and f"[default: {default_of(option)}" in out


@pytest.mark.parametrize(
    "upstream",
    ["http://user:PASS-SECRET@127.0.0.1:9/", "http://127.0.0.1:9/p?token=PASS-SECRET",
     "http://127.0.0.1:9/#PASS-SECRET"],
)  # fmt: skip
def test_an_upstream_with_credentials_is_refused_without_echoing_them(upstream: str) -> None:
    pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")
    result = CliRunner().invoke(main, ["proxy", "--upstream", upstream, "--no-record"])
    assert result.exit_code == 1 and result.stderr.startswith("Error: --upstream ")
    assert "client's headers" in result.stderr and "127.0.0.1:9" in result.stderr
    assert "SECRET" not in result.output + result.stderr


def test_the_command_serves_records_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")
    from tests.proxy_support import FakeUpstream, json_reply

    log_dir = tmp_path / "caps"
    with FakeUpstream(lambda seen: json_reply("msg_cli", request_id="req_cli")) as up:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cachediag", "proxy", "--listen", "127.0.0.1:0",
             "--upstream", str(up.url), "--log-dir", str(log_dir)],
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert proc.stderr is not None
            ready = proc.stderr.readline()
            assert "listening on http://127.0.0.1:" in ready, ready
            assert f"forwarding to {up.url}" in ready and str(log_dir) in ready
            base = ready.split("ANTHROPIC_BASE_URL=")[1].strip()
            request = urllib.request.Request(
                base + "/v1/messages?beta=true",
                data=json.dumps({"model": "m", "messages": []}).encode(),
                headers={"x-api-key": "sk-ant-SECRET-CLI", "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=10) as resp:
                assert json.loads(resp.read())["id"] == "msg_cli"
            proc.send_signal(signal.SIGTERM)
            rest = proc.stderr.read()
            assert proc.wait(timeout=20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    assert "1 records written" in rest
    stored = "".join(p.read_text() for p in sorted(log_dir.glob("*.jsonl")))
    assert '"message_id":"msg_cli"' in stored
    assert "SECRET-CLI" not in stored + ready + rest


def start_proxy(upstream: str, log_dir: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "cachediag", "proxy", "--listen", "127.0.0.1:0",
         "--upstream", upstream, "--log-dir", str(log_dir), *extra],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    ready = proc.stderr.readline()
    assert "listening on http://127.0.0.1:" in ready, ready
    return proc, ready.split("ANTHROPIC_BASE_URL=")[1].strip()


def send_in_background(url: str) -> None:
    def send() -> None:
        request = urllib.request.Request(url, data=b'{"model": "m", "messages": []}')
        # The proxy stops under it: what the tests are about.
        with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=120) as r:
            r.read()

    threading.Thread(target=send, daemon=True).start()


def wait_for(check: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_sigterm_with_a_hanging_upstream_stops_within_the_drain(tmp_path: Path) -> None:
    # The drain is 5 s; 60 s is a bound no stop that waits on the upstream can meet
    # (it used to wait 600 s).
    pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")
    from tests.proxy_support import FakeUpstream, json_reply, records

    hold = threading.Event()
    reply = json_reply("msg_hang")
    reply.hold = hold
    log_dir = tmp_path / "caps"
    with FakeUpstream(lambda seen: reply) as up:
        proc, base = start_proxy(str(up.url), log_dir)
        try:
            send_in_background(base + "/v1/messages")
            wait_for(lambda: up.seen, "the request never reached the upstream")
            proc.send_signal(signal.SIGTERM)
            _, rest = proc.communicate(timeout=60)
            wait_for(lambda: up.left_early, "the upstream request outlived the proxy")
        finally:
            hold.set()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0
    assert "stopping; requests in flight have 5 s" in rest and "1 records written" in rest
    assert [r["failure"] for r in records(log_dir)] == ["cancelled"]


def test_a_second_signal_stops_at_once(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp", reason="the proxy extra (aiohttp) is not installed")
    from tests.proxy_support import FakeUpstream, json_reply

    hold = threading.Event()
    reply = json_reply("msg_hang")
    reply.hold = hold
    with FakeUpstream(lambda seen: reply) as up:
        # A drain long enough that only the second signal can explain a prompt exit.
        proc, base = start_proxy(str(up.url), tmp_path / "caps", "--drain", "600")
        try:
            send_in_background(base + "/v1/messages")
            wait_for(lambda: up.seen, "the request never reached the upstream")
            proc.send_signal(signal.SIGTERM)
            assert proc.stderr is not None
            assert "stopping" in proc.stderr.readline()
            proc.send_signal(signal.SIGINT)
            _, rest = proc.communicate(timeout=60)
        finally:
            hold.set()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 128 + signal.SIGINT
    assert "stopped at once (second signal)" in rest


def settings_file(tmp_path: Path, content: dict[str, object] | None) -> Path:
    path = tmp_path / "settings.json"
    if content is not None:
        path.write_text(json.dumps(content))
    return path


def install(path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["proxy", "install", "--settings", str(path), *args])
    return result.exit_code, result.output


def test_install_sets_the_base_url_and_keeps_everything_else(tmp_path: Path) -> None:
    path = settings_file(tmp_path, {"env": {"FOO": "1"}, "model": "opus"})
    path.chmod(0o640)
    code, out = install(path)
    assert code == 0 and "ANTHROPIC_BASE_URL set to http://127.0.0.1:8787" in out
    assert json.loads(path.read_text()) == {
        "env": {"FOO": "1", "ANTHROPIC_BASE_URL": "http://127.0.0.1:8787"},
        "model": "opus",
    }
    assert path.stat().st_mode & 0o777 == 0o640
    assert json.loads(next(tmp_path.glob("settings.json.*.bak")).read_text())["env"] == {"FOO": "1"}
    code, out = install(path)
    assert code == 0 and "nothing changed" in out


def test_install_refuses_another_url_without_force(tmp_path: Path) -> None:
    path = settings_file(tmp_path, {"env": {"ANTHROPIC_BASE_URL": "https://gateway.example"}})
    code, out = install(path)
    assert code == 1 and "--force" in out
    assert "gateway.example" in path.read_text()
    code, _ = install(path, "--force", "--listen", "127.0.0.1:9999")
    assert code == 0
    assert json.loads(path.read_text())["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9999"


def test_install_through_a_symlinked_settings_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text("{}")
    link = tmp_path / "settings.json"
    link.symlink_to(real)
    code, _ = install(link)
    assert code == 0 and link.is_symlink()
    assert json.loads(real.read_text())["env"]["ANTHROPIC_BASE_URL"].startswith("http://127")


def test_install_leaves_a_broken_settings_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{not json")
    code, out = install(path)
    assert code == 1 and "not changed" in out
    assert path.read_text() == "{not json"

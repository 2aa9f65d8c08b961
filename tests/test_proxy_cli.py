"""``cachediag proxy`` as users run it, and ``cachediag proxy install``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

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
    assert "pip install 'cachediag[proxy]'" in result.stderr


def test_help_shows_the_two_line_setup() -> None:
    out = CliRunner().invoke(main, ["proxy", "--help"]).output
    assert "cachediag proxy &" in out and "cachediag proxy install" in out


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
    stored = (log_dir / os.listdir(log_dir)[0]).read_text()
    assert '"message_id":"msg_cli"' in stored
    assert "SECRET-CLI" not in stored + ready + rest


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
    assert json.loads((tmp_path / "settings.json.bak").read_text())["env"] == {"FOO": "1"}
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

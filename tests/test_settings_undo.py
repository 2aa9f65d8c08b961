"""Install, install again, uninstall: settings.json back as the user had it, byte for
byte, for the status line and the proxy; every backup kept; someone else's later value
never taken back."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.errors import CachediagError
from cachediag.proxy import install as proxy_install
from cachediag.settings_undo import record_path
from cachediag.statusline import install as line_install

CCUSAGE = "bun x ccusage statusline"
# The user's own formatting: four spaces, a key order of their own, numbers as typed.
ORIGINAL = (
    '{\n    "model": "opus",\n    "statusLine": {"type": "command", "command": "'
    + CCUSAGE
    + '", "padding": 1},\n'
    '    "env": {"ANTHROPIC_BASE_URL": "https://gateway.example/v1", "X": "1"},\n'
    '    "cleanupPeriodDays": 30.0, "big": 1.0e400\n}'
).encode()


def backups(folder: Path) -> list[Path]:
    return sorted(folder.glob("settings.json.*.bak"))


def proxy_cli(path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["proxy", *args, "--settings", str(path)])
    return result.exit_code, result.output


def test_statusline_install_force_again_uninstall_is_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(ORIGINAL)
    path.chmod(0o640)
    with pytest.raises(CachediagError, match="--force"):
        line_install.install(path, "cachediag statusline")
    assert path.read_bytes() == ORIGINAL
    assert line_install.install(path, "cachediag statusline", force=True).changed
    assert line_install.install(path, "cachediag statusline --x", force=True).changed
    assert json.loads(path.read_text())["statusLine"]["command"] == "cachediag statusline --x"
    undone = line_install.uninstall(path)
    assert undone.outcome == "verbatim" and undone.edited.backup is not None
    assert path.read_bytes() == ORIGINAL and path.stat().st_mode & 0o777 == 0o640
    assert not record_path(path).exists()
    # Every state the file went through is one backup of its own, none lost.
    assert [b.read_bytes() == ORIGINAL for b in backups(tmp_path)].count(True) == 1
    assert len(backups(tmp_path)) == 3 and all(
        b.stat().st_mode & 0o777 == 0o600 for b in backups(tmp_path)
    )
    assert line_install.uninstall(path).outcome == "absent"
    assert path.read_bytes() == ORIGINAL


def test_proxy_install_force_again_uninstall_is_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(ORIGINAL)
    code, out = proxy_cli(path, "install")
    assert code == 1 and path.read_bytes() == ORIGINAL
    assert proxy_cli(path, "install", "--force")[0] == 0
    assert proxy_cli(path, "install", "--force", "--listen", "127.0.0.1:9000")[0] == 0
    env = json.loads(path.read_text())["env"]
    assert env == {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9000", "X": "1"}
    code, out = proxy_cli(path, "uninstall")
    assert code == 0, out
    assert "as it was before cachediag" in out and "backup:" in out
    assert path.read_bytes() == ORIGINAL
    code, out = proxy_cli(path, "uninstall")
    assert code == 0 and "nothing changed" in out and path.read_bytes() == ORIGINAL


def test_both_installs_undone_in_either_order_give_the_original(tmp_path: Path) -> None:
    for first_line in (True, False):
        path = tmp_path / f"{first_line}" / "settings.json"
        path.parent.mkdir()
        path.write_bytes(ORIGINAL)
        line_install.install(path, "cachediag statusline", force=True)
        proxy_install.install_base_url(path, "http://127.0.0.1:8787", force=True)
        steps = [line_install.uninstall, proxy_install.uninstall_base_url]
        first, second = steps if first_line else steps[::-1]
        assert first(path).outcome == "restored"  # the other install still there
        assert path.read_bytes() != ORIGINAL
        assert second(path).outcome == "verbatim"
        assert path.read_bytes() == ORIGINAL


def test_a_symlinked_settings_file_stays_a_link_to_the_same_bytes(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_bytes(ORIGINAL)
    real.chmod(0o600)
    path = tmp_path / "claude" / "settings.json"
    path.parent.mkdir()
    path.symlink_to(real)
    line_install.install(path, "cachediag statusline", force=True)
    proxy_install.install_base_url(path, "http://127.0.0.1:8787", force=True)
    line_install.uninstall(path)
    proxy_install.uninstall_base_url(path)
    assert path.is_symlink() and os.readlink(path) == str(real)
    assert real.read_bytes() == ORIGINAL and real.stat().st_mode & 0o777 == 0o600


def test_no_earlier_value_means_the_key_goes(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"theme": "dark"}')
    proxy_install.install_base_url(path, "http://127.0.0.1:8787")
    line_install.install(path, "cachediag statusline")
    assert proxy_install.uninstall_base_url(path).outcome == "removed"
    assert "env" not in json.loads(path.read_text())  # the env cachediag added goes too
    assert line_install.uninstall(path).outcome == "verbatim"
    assert path.read_text() == '{"theme": "dark"}'
    # No file at all before: none after.
    fresh = tmp_path / "new" / "settings.json"
    line_install.install(fresh, "cachediag statusline")
    assert line_install.uninstall(fresh).outcome == "deleted"
    assert not fresh.exists() and backups(fresh.parent)


def test_later_edits_are_kept_and_the_users_value_comes_back(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(ORIGINAL)
    line_install.install(path, "cachediag statusline", force=True)
    # The user changes something else meanwhile.
    path.write_text(
        path.read_text().replace('"model": "opus"', '"model": "opus", "theme": "light"')
    )
    assert line_install.uninstall(path).outcome == "restored"
    after = json.loads(path.read_text())
    assert after["theme"] == "light"
    assert after["statusLine"] == {"type": "command", "command": CCUSAGE, "padding": 1}
    assert '"big": 1.0e400' in path.read_text()  # numbers as written


def test_someone_elses_later_value_is_not_taken_back(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(ORIGINAL)
    proxy_install.install_base_url(path, "http://127.0.0.1:8787", force=True)
    path.write_text(
        path.read_text().replace("http://127.0.0.1:8787", "https://other-gateway.example")
    )
    before = path.read_bytes()
    code, out = proxy_cli(path, "uninstall")
    assert code == 1 and "not cachediag's now" in out and path.read_bytes() == before
    # Installing over it again records that value, not the first one, as the user's.
    proxy_install.install_base_url(path, "http://127.0.0.1:8787", force=True)
    proxy_install.uninstall_base_url(path)
    assert json.loads(path.read_text())["env"]["ANTHROPIC_BASE_URL"] == (
        "https://other-gateway.example"
    )


def test_an_install_without_a_record_is_removed_not_restored(tmp_path: Path) -> None:
    """A line installed by a cachediag that kept no record: uninstall removes it rather
    than guess an earlier value."""
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"statusLine": {"command": "cachediag statusline"}, "a": 1}))
    line_install.install(path, "cachediag statusline --new")
    assert line_install.uninstall(path).outcome == "removed"
    assert json.loads(path.read_text()) == {"a": 1}


def test_the_record_is_private_and_never_a_link(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(ORIGINAL)
    line_install.install(path, "cachediag statusline", force=True)
    record = record_path(path)
    assert record.stat().st_mode & 0o777 == 0o600
    record.unlink()
    victim = tmp_path / "victim"
    victim.write_text("{}")
    record.symlink_to(victim)
    with pytest.raises(CachediagError, match="install record"):
        line_install.uninstall(path)
    assert victim.read_text() == "{}"


def test_concurrent_installs_and_uninstalls_keep_file_and_record_whole(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(ORIGINAL)
    errors: list[BaseException] = []

    def churn(kind: int) -> None:
        try:
            for i in range(15):
                if kind:
                    line_install.install(path, f"cachediag statusline {i}", force=True)
                else:
                    proxy_install.install_base_url(path, f"http://127.0.0.1:{9000 + i}", force=True)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(k % 2,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    line_install.uninstall(path)
    proxy_install.uninstall_base_url(path)
    assert path.read_bytes() == ORIGINAL


def test_statusline_install_and_uninstall_as_users_run_them(tmp_path: Path) -> None:
    """Through the console entry (the status line's arguments go to the fast path, which
    hands ``uninstall`` on) and through click: the same lines, the original bytes back."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    path = tmp_path / "settings.json"
    path.write_bytes(ORIGINAL)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def entry(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "cachediag", "statusline", *args]
        return subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tmp_path)

    assert entry("install", "--settings", str(path), "--force").returncode == 0
    result = CliRunner().invoke(
        main, ["statusline", "install", "--settings", str(path), "--force", "--script", "jq"]
    )
    assert result.exit_code == 0, result.output
    done = entry("uninstall", "--settings", str(path))
    assert done.returncode == 0, done.stderr
    said, _, backup = done.stdout.partition(" (backup: ")
    assert said == (
        f"{path}: statusLine undone; the file is byte for byte as it was before cachediag"
    )
    assert Path(backup.removesuffix(")\n")) in backups(tmp_path)
    assert path.read_bytes() == ORIGINAL
    again = CliRunner().invoke(main, ["statusline", "uninstall", "--settings", str(path)])
    assert again.exit_code == 0 and "nothing changed" in again.output
    assert entry("uninstall", "--bogus").returncode == 2
    # Someone else's line since: refused, exit 1, the file untouched.
    line_install.install(path, "cachediag statusline", force=True)
    path.write_text(path.read_text().replace('"cachediag statusline"', '"my-own-line"'))
    before = path.read_bytes()
    refused = entry("uninstall", "--settings", str(path))
    assert refused.returncode == 1 and "not cachediag's now" in refused.stderr
    assert path.read_bytes() == before

"""``cachediag statusline install``: the settings.json writer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from cachediag.cli import main
from cachediag.statusline import install


def test_install_writes_backs_up_and_refuses(tmp_path: Path) -> None:
    settings = tmp_path / "claude" / "settings.json"
    done = install.install(settings, "cachediag statusline")
    assert done.changed and done.backup is None
    assert json.loads(settings.read_text())["statusLine"] == {
        "type": "command",
        "command": "cachediag statusline",
        "padding": 0,
    }
    assert not install.install(settings, "cachediag statusline").changed  # idempotent
    data = json.loads(settings.read_text())
    data["statusLine"] = {"type": "command", "command": "~/my-line.sh"}
    data["theme"] = "dark"
    settings.write_text(json.dumps(data))
    with pytest.raises(install.CachediagError, match="--force"):
        install.install(settings, "cachediag statusline")
    done = install.install(settings, "cachediag statusline", force=True)
    assert done.backup is not None
    assert json.loads(done.backup.read_text())["statusLine"]["command"] == "~/my-line.sh"
    after = json.loads(settings.read_text())
    assert after["theme"] == "dark" and after["statusLine"]["command"] == "cachediag statusline"
    settings.write_text("[]")
    with pytest.raises(install.CachediagError, match="not a JSON object"):
        install.install(settings, "x")


def test_install_command_honours_claude_config_dir(tmp_path: Path) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    result = CliRunner().invoke(main, ["statusline", "install", "--script", "jq"], env=env)
    assert result.exit_code == 0, result.output
    entry = json.loads((tmp_path / "cfg" / "settings.json").read_text())["statusLine"]
    script = tmp_path / "cfg" / "cachediag" / "prompt-cache.sh"
    assert entry["command"] == f"bash {script}" and script.is_file()
    result = CliRunner().invoke(main, ["statusline", "install"], env=env)
    assert result.exit_code == 0  # replacing our own script line needs no --force
    command = json.loads((tmp_path / "cfg" / "settings.json").read_text())["statusLine"]["command"]
    # The installed fast command really runs, without site, and prints a line.
    out = subprocess.run(
        ["bash", "-c", command],
        input=b'{"prompt_cache": {"hit_ratio": 0.25}}',
        capture_output=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert (out.returncode, out.stdout) == (0, b"cache 25%\n")


def test_statusline_help_and_in_process_run() -> None:
    result = CliRunner().invoke(main, ["statusline", "--help"])
    assert result.exit_code == 0
    for name in ("{hit}", "{warm}", "{misses}", "{last}", "{agents}", "install"):
        assert name in result.output
    result = CliRunner().invoke(
        main, ["statusline", "--no-color"], input='{"prompt_cache": {"hit_ratio": 0.5}}'
    )
    assert (result.exit_code, result.output) == (0, "cache 50%\n")


@pytest.mark.skipif(shutil.which("jq") is None, reason="needs jq")
def test_installed_cachediag_jq_script_finds_its_partner(tmp_path: Path) -> None:
    import sys

    from tests.conftest import ROOT

    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    result = CliRunner().invoke(
        main, ["statusline", "install", "--script", "cachediag-jq"], env=env
    )
    assert result.exit_code == 0, result.output
    command = json.loads((tmp_path / "cfg" / "settings.json").read_text())["statusLine"]["command"]
    stdin = b'{"prompt_cache": {"hit_ratio": 0.25, "requests": 2, "misses": 0}}'
    run_env = {
        **os.environ,
        "CACHEDIAG": f"{sys.executable} -m cachediag",
        "PYTHONPATH": str(ROOT),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
    }
    out = subprocess.run(["bash", "-c", command], input=stdin, capture_output=True, env=run_env)
    assert (out.returncode, out.stdout) == (0, "cache 25% · cold · 0 misses\n".encode())

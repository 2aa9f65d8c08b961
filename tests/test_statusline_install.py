"""``cachediag statusline install``: the settings.json writer."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
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
    assert entry["command"].endswith(f"bash {script}") and script.is_file()
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


def _minimal_env(tmp_path: Path, path: str) -> dict[str, str]:
    """What Claude Code started from a desktop launcher may give: no venv, no ~/.local/bin,
    no Homebrew on PATH, nothing else inherited."""
    return {"PATH": path, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "xdg")}


def _installed(tmp_path: Path, *args: str) -> str:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    result = CliRunner().invoke(main, ["statusline", "install", "--force", *args], env=env)
    assert result.exit_code == 0, result.output
    command = json.loads((tmp_path / "cfg" / "settings.json").read_text())["statusLine"]["command"]
    assert isinstance(command, str)
    return command


def _run_as_claude_code(command: str, stdin: bytes, env: dict[str, str]) -> bytes:
    """Claude Code runs the command through a shell; both common ones are tried."""
    outputs = set()
    for shell in ("/bin/sh", "/bin/bash"):
        if not Path(shell).exists():
            continue
        done = subprocess.run(
            [shell, "-c", command], input=stdin, capture_output=True, env=env, timeout=60
        )
        assert done.returncode == 0 and done.stderr == b"", (shell, done.stderr)
        outputs.add(done.stdout)
    assert len(outputs) == 1
    return outputs.pop()


def test_default_command_needs_nothing_on_path(tmp_path: Path) -> None:
    """``env -i PATH=/usr/bin:/bin``, and even a PATH with nothing on it: the interpreter
    and the package are named by absolute path."""
    from tests.statusline_support import THREE, write

    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    command = _installed(tmp_path)
    stdin = json.dumps({"transcript_path": str(t)}).encode()
    for path in ("/usr/bin:/bin", str(tmp_path / "empty")):
        env = {**_minimal_env(tmp_path, path), "NO_COLOR": "1"}
        line = _run_as_claude_code(command, stdin, env)
        assert line == "m-1 · cache 32% · cold · 1 miss · last: ttl_expired_5m\n".encode()


@pytest.mark.skipif(shutil.which("jq") is None, reason="needs jq")
@pytest.mark.parametrize("script", ["jq", "cachediag-jq"])
def test_script_commands_need_neither_cachediag_nor_jq_on_path(tmp_path: Path, script: str) -> None:
    """The scripts' own helpers (cat, head, dirname) are all a PATH holds here: bash, jq and
    cachediag come from the command ``install`` wrote."""
    from tests.statusline_support import THREE, write

    t = tmp_path / "s1.jsonl"
    write(t, THREE)
    command = _installed(tmp_path, "--script", script)
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("cat", "head", "dirname"):
        found = shutil.which(name)
        assert found is not None
        (tools / name).symlink_to(found)
    # An older Claude Code sends no prompt_cache: only cachediag, found through the
    # command, can compute the line from the transcript; jq alone says it cannot.
    stdin = {"transcript_path": str(t)}
    line = _run_as_claude_code(
        command, json.dumps(stdin).encode(), _minimal_env(tmp_path, str(tools))
    )
    expected = {"jq": "cache ?", "cachediag-jq": "cache 32% · cold · 1 miss · last: ttl_expired_5m"}
    assert line == f"{expected[script]}\n".encode()
    # Under /usr/bin:/bin as well (the usual minimal PATH).
    again = _run_as_claude_code(
        command, json.dumps(stdin).encode(), _minimal_env(tmp_path, "/usr/bin:/bin")
    )
    assert again == line


def test_a_path_with_spaces_and_quotes_is_quoted(tmp_path: Path) -> None:
    odd = tmp_path / "my cfg's dir"
    command = install.script_command("cachediag-jq", odd / "settings.json")
    words = shlex.split(command)
    assert words[0].startswith("CACHEDIAG=") and words[0].endswith(install.LAUNCHER)
    assert Path(words[0].removeprefix("CACHEDIAG=")).is_file()
    assert Path(words[-1]) == odd / "cachediag" / "cachediag-json.sh"


def test_scripts_replace_links_rather_than_write_through_them(tmp_path: Path) -> None:
    folder = tmp_path / "cfg" / "cachediag"
    folder.mkdir(parents=True)
    victim = tmp_path / "victim.sh"
    victim.write_text("#!/bin/sh\necho mine\n")
    victim.chmod(0o600)
    (folder / "prompt-cache.sh").symlink_to(victim)
    os.link(victim, folder / install.LAUNCHER)
    command = install.script_command("jq", tmp_path / "cfg" / "settings.json")
    assert victim.read_text() == "#!/bin/sh\necho mine\n"
    assert victim.stat().st_mode & 0o777 == 0o600 and victim.stat().st_nlink == 1
    for name in ("prompt-cache.sh", "cachediag-json.sh", install.LAUNCHER):
        st = (folder / name).lstat()
        assert stat.S_ISREG(st.st_mode) and st.st_mode & 0o777 == 0o755, name
    assert (folder / "prompt-cache.sh").read_bytes() == (
        install.SCRIPTS_DIR / "prompt-cache.sh"
    ).read_bytes()
    assert command.endswith(f"bash {folder / 'prompt-cache.sh'}")


def test_a_script_folder_that_cannot_be_written_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "cachediag").write_text("a file, not a folder")
    with pytest.raises(install.CachediagError, match="cannot write the status line's scripts"):
        install.script_command("jq", tmp_path / "cfg" / "settings.json")

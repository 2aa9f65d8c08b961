"""The one settings.json writer of every ``install``: numbers kept as written, backups
private from their first byte, named by the time, never overwritten nor written through
a link, the file itself replaced atomically with its mode kept."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cachediag.claude_settings import dump_settings, edit_settings, parse_settings
from cachediag.errors import CachediagError

NUMBERS = ["1.0e400", "-1E-400", "0.10", "-0", "-0.0", "1E2", "12345678901234567890.5", "7" * 5000]


def add_key(obj: dict[str, Any]) -> dict[str, Any]:
    obj["added"] = {"padding": 0, "ratio": 0.5}
    return obj


def test_numbers_are_written_back_as_they_were_written(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    body = ", ".join(f'"n{i}": {n}' for i, n in enumerate(NUMBERS))
    path.write_text('{"env": {"X": "1"}, ' + body + ', "list": [' + ", ".join(NUMBERS) + "]}")
    done = edit_settings(path, add_key)
    assert done.changed
    text = path.read_text()
    for number in NUMBERS:
        assert f": {number}," in text or f": {number}\n" in text
        assert f"    {number}" in text  # in the list too
    assert "Infinity" not in text and "NaN" not in text
    strict = json.loads(text, parse_int=str, parse_constant=lambda c: pytest.fail(f"{c} written"))
    assert strict["added"] == {"padding": "0", "ratio": 0.5} and strict["env"] == {"X": "1"}
    assert not edit_settings(path, lambda obj: obj).changed  # read back equal to itself


def test_nan_and_infinity_are_not_json_and_the_file_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    for constant in ("NaN", "Infinity", "-Infinity"):
        path.write_text('{"a": ' + constant + "}")
        with pytest.raises(CachediagError, match=r"not a JSON value.*not changed"):
            edit_settings(path, add_key)
        assert path.read_text() == '{"a": ' + constant + "}"
        assert not (tmp_path / "settings.json.bak").exists()
    with pytest.raises(CachediagError, match="no JSON form"):
        edit_settings(path.with_name("new.json"), lambda obj: {"x": float("inf")})


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)  # fmt: skip


@given(JSON_VALUES)
def test_the_writer_writes_what_json_dumps_writes(value: Any) -> None:
    assert dump_settings(value) == json.dumps(value, indent=2) + "\n"
    document = {"v": value}
    assert dump_settings(parse_settings(json.dumps(document), Path("x"))) == dump_settings(document)


def test_the_backup_is_0600_from_its_first_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"env": {"ANTHROPIC_API_KEY": "sk-ant-secret"}}')
    path.chmod(0o644)
    modes = []
    real_write = os.write

    def watching_write(fd: int, data: Any) -> int:
        modes.append(os.fstat(fd).st_mode & 0o777)
        return real_write(fd, data)

    monkeypatch.setattr("os.write", watching_write)
    old = os.umask(0)  # nothing narrows what the code asks for
    try:
        done = edit_settings(path, add_key)
    finally:
        os.umask(old)
        monkeypatch.undo()
    assert done.backup is not None
    assert done.backup.stat().st_mode & 0o777 == 0o600
    assert "sk-ant-secret" in done.backup.read_text()
    assert path.stat().st_mode & 0o777 == 0o644  # the settings file keeps its own mode
    assert modes == [0o600, 0o644]  # the backup's bytes, then the new settings'


STAMP = "20261202T042700Z"


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> str:
    """Every backup of the test made in the same second (the name's time part fixed)."""
    monkeypatch.setattr("time.strftime", lambda fmt, t: STAMP)
    return STAMP


def test_every_backup_is_kept_none_overwritten(tmp_path: Path, frozen_clock: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"n": 0}')
    seen = []
    for n in range(1, 4):
        done = edit_settings(path, lambda obj, n=n: {"n": n})  # type: ignore[misc]
        assert done.backup is not None
        seen.append((done.backup.name, done.backup.read_text()))
    assert seen == [
        (f"settings.json.{frozen_clock}.bak", '{"n": 0}'),
        (f"settings.json.{frozen_clock}-2.bak", '{\n  "n": 1\n}\n'),
        (f"settings.json.{frozen_clock}-3.bak", '{\n  "n": 2\n}\n'),
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["settings.json", *(name for name, _ in seen)]
    )


def test_a_hard_link_at_the_backup_name_is_left_alone(tmp_path: Path, frozen_clock: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"env": {"ANTHROPIC_API_KEY": "sk-ant-secret"}}')
    victim = tmp_path / "victim.txt"
    victim.write_text("somebody else's file\n")
    victim.chmod(0o644)
    os.link(victim, tmp_path / f"settings.json.{frozen_clock}.bak")
    done = edit_settings(path, add_key)
    assert done.backup is not None and done.backup.name == f"settings.json.{frozen_clock}-2.bak"
    assert victim.read_text() == "somebody else's file\n"
    assert victim.stat().st_mode & 0o777 == 0o644 and victim.stat().st_nlink == 2
    backup = done.backup.stat()
    assert backup.st_nlink == 1 and backup.st_mode & 0o777 == 0o600
    assert "sk-ant-secret" in done.backup.read_text()


def test_a_symlink_at_the_backup_name_is_not_followed(tmp_path: Path, frozen_clock: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{}")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    (tmp_path / f"settings.json.{frozen_clock}.bak").symlink_to(victim)
    (tmp_path / f"settings.json.{frozen_clock}-2.bak").symlink_to(tmp_path / "nowhere")
    done = edit_settings(path, add_key)
    assert done.backup is not None and not done.backup.is_symlink()
    assert done.backup.name == f"settings.json.{frozen_clock}-3.bak"
    assert victim.read_text() == "keep\n" and done.backup.read_text() == "{}"
    assert not (tmp_path / "nowhere").exists()


def test_without_hard_links_the_backup_is_created_exclusively(
    tmp_path: Path, frozen_clock: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr("os.link", no_links)
    path = tmp_path / "settings.json"
    path.write_text('{"a": 1}')
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    (tmp_path / f"settings.json.{frozen_clock}.bak").symlink_to(victim)
    done = edit_settings(path, add_key)
    assert done.backup is not None and done.backup.name == f"settings.json.{frozen_clock}-2.bak"
    assert done.backup.read_text() == '{"a": 1}' and victim.read_text() == "keep\n"
    assert done.backup.stat().st_mode & 0o777 == 0o600


def test_a_backup_that_cannot_be_written_leaves_the_settings_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr("os.link", broken)
    path = tmp_path / "settings.json"
    path.write_text('{"a": 1}')
    with pytest.raises(CachediagError, match=r"cannot write it .*not changed"):
        edit_settings(path, add_key)
    assert path.read_text() == '{"a": 1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    os.mkfifo(path)
    with pytest.raises(CachediagError, match="not a regular file"):
        edit_settings(path, add_key)


def test_a_new_settings_file_and_its_folder_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        done = edit_settings(tmp_path / "cfg" / "settings.json", add_key)
    finally:
        os.umask(old)
    assert done.changed and done.backup is None
    assert (tmp_path / "cfg").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "cfg" / "settings.json").stat().st_mode & 0o777 == 0o600

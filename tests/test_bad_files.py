"""Files the bot cannot use stop `python -m bot` with one line on stderr and exit code 2, no traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, run_bot, write_config

NOT_UTF8 = "# caf\xe9 in Latin-1\n".encode("latin-1")


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and all(fragment in line for fragment in fragments), line
    assert result.stdout == ""


def test_a_config_that_is_not_utf8(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    config.write_bytes(config.read_bytes() + NOT_UTF8)
    assert_one_line_error(run_bot("--config", str(config)), str(config), "not UTF-8")


def test_a_persona_file_that_is_not_utf8(tmp_path: Path) -> None:
    personas = shutil.copytree(REPO / "personas", tmp_path / "cast", ignore=shutil.ignore_patterns("*.py", "__*"))
    (personas / "sage.toml").write_bytes((personas / "sage.toml").read_bytes() + NOT_UTF8)
    config = write_config(tmp_path, {"bot": {"personas_dir": str(personas)}})
    assert_one_line_error(run_bot("--config", str(config)), str(personas / "sage.toml"), "not UTF-8")


def test_a_script_that_is_not_utf8(tmp_path: Path) -> None:
    script = tmp_path / "script.txt"
    script.write_bytes(b"Sage, hello\n" + NOT_UTF8)
    result = run_bot("console", "--config", str(write_config(tmp_path)), "--script", str(script))
    assert_one_line_error(result, str(script), "not UTF-8")


def test_a_data_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a directory")
    assert_one_line_error(run_bot("--config", str(write_config(tmp_path))), "[storage] data_dir", "is a file")


def test_a_data_dir_that_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    config = write_config(tmp_path, {"storage": {"data_dir": str(tmp_path / "file" / "data")}})
    assert_one_line_error(run_bot("--config", str(config)), "[storage] data_dir", "not a writable directory")


@pytest.fixture
def unwritable_dir(tmp_path: Path) -> Path:
    """A directory this process cannot write in; root writes anywhere mode bits allow, but not in /proc."""
    if os.geteuid() == 0:
        return Path("/proc")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    return locked


def test_an_unwritable_data_dir(tmp_path: Path, unwritable_dir: Path) -> None:
    config = write_config(tmp_path, {"storage": {"data_dir": str(unwritable_dir)}})
    assert_one_line_error(run_bot("--config", str(config)), "[storage] data_dir", "not a writable directory")

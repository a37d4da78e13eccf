"""The console channel end to end, as a user runs it: a subprocess and a script."""

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, write_config

SCRIPT = """\
# a comment line is skipped
Hello Nova, what should we launch?
/moderate on
Let's decide together.
/moderate status
/invite pixel
/moderate off
/personas
Pixel, pick a colour.
/moderate sideways
"""


def run_console(tmp_path, *extra: str) -> subprocess.CompletedProcess:
    config = write_config(tmp_path)
    script = tmp_path / "script.txt"
    script.write_text(SCRIPT)
    return subprocess.run(
        [sys.executable, "-m", "bot", "console", "--config", str(config), "--script", str(script), *extra],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_scripted_console_run_prints_the_transcript(tmp_path):
    result = run_console(tmp_path, "--verbose")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("[system] Roundtable console #general, model: scripted test double")
    assert lines[1:3] == [
        "[you] Hello Nova, what should we launch?",
        '[Nova] Picture the bigger version of this: "Hello Nova, what should we launch?" is worth a second thought.',
    ]
    moderated = lines[lines.index("[you] Let's decide together.") + 1 :]
    assert moderated[0] == "[moderator] next: Nova (Nova has not spoken since the last human message)"
    assert [line.split("]")[0] + "]" for line in moderated[1:6:2]] == ["[Nova]", "[Sage]", "[Rex]"]
    assert moderated[6].startswith("[moderator] next: FINISH")
    assert "[system] Pixel joined." in lines
    assert any(line.startswith("[Pixel] Ooh, I can already see it:") for line in lines)
    assert (
        lines[-1]
        == "[system] usage: /moderate on [max_turns] | off | status | pause | resume | reasons on|off | prompt TEXT|reset | recruit on|off"
    )


def test_without_verbose_the_moderator_is_silent(tmp_path):
    result = run_console(tmp_path)
    assert result.returncode == 0
    assert "[moderator]" not in result.stdout


def test_prompt_command_prints_what_a_persona_receives(tmp_path):
    run_console(tmp_path)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot",
            "prompt",
            "--config",
            str(write_config(tmp_path)),
            "--channel",
            "general",
            "--persona",
            "pixel",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("--- system ---\nYou are Pixel")
    assert "--- human ---\n[system] Pixel joined" in out
    assert "Hello Nova" not in out  # Pixel joined later and never saw it
    assert "--- ai ---\nOoh, I can already see it:" in out


def test_roundtable_command_works_from_a_folder_with_its_own_personas(tmp_path):
    """A user's folder holds config.toml and personas/*.toml; that personas/ must not hide our package."""
    personas = tmp_path / "personas"
    shutil.copytree(REPO / "personas", personas, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    nova = personas / "nova.toml"
    nova.write_text(nova.read_text().replace("Picture the bigger version of this:", "Straight from this folder:"))
    (tmp_path / "config.toml").write_text('[llm]\nprovider = "scripted"\n')
    (tmp_path / "script.txt").write_text("Hello Nova\n")
    roundtable = Path(sys.executable).with_name("roundtable")
    result = subprocess.run(
        [str(roundtable), "--config", str(tmp_path / "config.toml"), "console", "--script", "script.txt"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert '[Nova] Straight from this folder: "Hello Nova" is worth a second thought.' in result.stdout.splitlines()

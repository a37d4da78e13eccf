"""`roundtable persona check` and `roundtable persona try`, run as an author runs them: a subprocess."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO, run_bot, write_config

BROKEN = """\
id = "Bad Id"
display_name = "Bolt"
talkativeness = 1.5
actions = ["publish_post", "dance"]
colour = "teal"
system_prompt = "You are brisk."
"""


def test_check_passes_the_repos_personas() -> None:
    files = sorted(str(path) for path in (REPO / "personas").glob("*.toml"))
    result = run_bot("persona", "check", *files)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        f"{path}: ok ({Path(path).stem}, {Path(path).stem.title()})" for path in files
    ]
    assert run_bot("persona", "check", str(REPO / "personas")).stdout == result.stdout  # a directory: its files


def test_check_lists_every_problem_of_a_broken_file_one_line_each(tmp_path: Path) -> None:
    broken = tmp_path / "bolt.toml"
    broken.write_text(BROKEN, encoding="utf-8")
    twin = tmp_path / "twin.toml"
    twin.write_text((REPO / "personas" / "sage.toml").read_text(encoding="utf-8"), encoding="utf-8")
    nova = REPO / "personas" / "nova.toml"
    result = run_bot("persona", "check", str(broken), str(REPO / "personas" / "sage.toml"), str(twin), str(nova))

    assert result.returncode == 2
    assert result.stderr == ""  # no traceback
    assert result.stdout.splitlines() == [
        f"{broken}: id: String should match pattern '^[a-z][a-z0-9_-]{{0,31}}$' (got 'Bad Id')",
        f"{broken}: avatar: missing required field",
        f"{broken}: talkativeness: Input should be less than or equal to 1 (got 1.5)",
        f"{broken}: colour: unknown field",
        f"{broken}: actions: unknown action 'dance' (known: publish_post, send_message, schedule_post, note_to, remember, delete_post)",
        f"{REPO / 'personas' / 'sage.toml'}: ok (sage, Sage)",
        f"{twin}: id: duplicate persona id 'sage' (also in {REPO / 'personas' / 'sage.toml'})",
        f"{nova}: ok (nova, Nova)",
    ]


def test_check_reports_unreadable_files_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('id = "x"\nname =\n', encoding="utf-8")
    result = run_bot("persona", "check", str(tmp_path / "bad.toml"), str(tmp_path / "gone.toml"))
    assert result.returncode == 2 and result.stderr == ""
    assert result.stdout.splitlines() == [
        f"{tmp_path / 'bad.toml'}: not valid TOML: Invalid value (at line 2, column 7)",
        f"{tmp_path / 'gone.toml'}: cannot be read (No such file or directory)",
    ]


def test_the_bot_names_the_first_problem_and_points_to_check(tmp_path: Path) -> None:
    cast = tmp_path / "cast"
    cast.mkdir()
    (cast / "bolt.toml").write_text(BROKEN, encoding="utf-8")
    config = write_config(tmp_path, {"bot": {"personas_dir": str(cast), "participants": ["bolt"]}})
    result = run_bot("console", "--config", str(config), "--script", "/dev/null")
    assert result.returncode == 2
    assert result.stderr == (
        f"error: {cast / 'bolt.toml'}: id: String should match pattern '^[a-z][a-z0-9_-]{{0,31}}$' (got 'Bad Id') "
        f"(and 4 more: roundtable persona check {cast})\n"
    )


def test_try_prints_the_prompt_then_one_reply_and_stores_nothing(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    result = run_bot("persona", "try", "nova", "Nova, what should we launch?", "--config", str(config))

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith(
        "--- system ---\nYou are Nova, one participant in a group chat. Other participants: Sage, Rex."
    )
    assert "It waits for a person's approval before it runs." in out  # the actions, as a round would show them
    prompt, reply = out.split("--- reply from Nova; model: scripted test double", 1)
    assert prompt.endswith("--- human ---\nyou: Nova, what should we launch?\n")
    assert (
        reply.splitlines()[1]
        == 'Picture the bigger version of this: "Nova, what should we launch?" is worth a second thought.'
    )
    assert not (tmp_path / "data").exists(), "no database, no data directory"


def test_try_prints_what_roundtable_prompt_prints_for_a_new_channel(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    tried = run_bot("persona", "try", "sage", "Sage, hello", "--config", str(config)).stdout
    script = tmp_path / "script.txt"
    script.write_text("Sage, hello\n", encoding="utf-8")
    run_bot("console", "--config", str(config), "--script", str(script))
    shown = run_bot("prompt", "--config", str(config), "--channel", "general", "--persona", "sage").stdout
    clock = re.compile(r"^It is .* \(UTC\)\.$", flags=re.MULTILINE)  # the scene's clock: the minute may turn between
    assert clock.sub("", tried.split("--- reply from Sage")[0]) == clock.sub("", shown.split("--- ai ---")[0])


def test_try_a_file_that_is_not_added_yet(tmp_path: Path) -> None:
    draft = tmp_path / "drafts" / "bolt.toml"
    draft.parent.mkdir()
    fixed = (
        BROKEN.replace("Bad Id", "bolt")
        .replace("1.5", "0.5")
        .replace(', "dance"', "")
        .replace('colour = "teal"', 'avatar = "⚡"')
    )
    draft.write_text(fixed, encoding="utf-8")
    result = run_bot("persona", "try", str(draft), "Bolt, are you there?", "--config", str(write_config(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        "--- system ---\nYou are Bolt, one participant in a group chat. Other participants: Nova, Sage, Rex."
    )
    assert "\n--- reply from Bolt; model: scripted test double" in result.stdout


def test_try_an_unknown_persona_or_a_broken_file(tmp_path: Path) -> None:
    config = str(write_config(tmp_path))
    unknown = run_bot("persona", "try", "zed", "hello", "--config", config)
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr == "error: no persona 'zed'; known: nova, pixel, rex, sage (or give a persona file)\n"
    (tmp_path / "bolt.toml").write_text(BROKEN, encoding="utf-8")
    broken = run_bot("persona", "try", str(tmp_path / "bolt.toml"), "hello", "--config", config)
    assert broken.returncode == 2 and broken.stdout == ""
    assert broken.stderr.startswith(f"error: {tmp_path / 'bolt.toml'}: id: String should match pattern")
    assert broken.stderr.endswith(f"(and 4 more: roundtable persona check {tmp_path / 'bolt.toml'})\n")


def test_check_names_what_is_wrong_with_a_personas_examples(tmp_path: Path) -> None:
    nova = (REPO / "personas" / "nova.toml").read_text(encoding="utf-8")
    tagged = tmp_path / "tagged.toml"
    tagged.write_text(nova.replace('    "Love it!', '    "Nova: Love it!'), encoding="utf-8")
    many = tmp_path / "many.toml"
    many.write_text(
        nova.replace('id = "nova"', 'id = "nova2"').replace(
            "examples = [", "examples = [\n" + '    "One more line.",\n' * 6
        ),
        encoding="utf-8",
    )

    result = run_bot("persona", "check", str(tagged), str(many))
    shown = "Nova: Love it! Let's give it a name peop"  # its first 40 characters

    assert result.returncode == 2
    assert result.stdout.splitlines() == [
        f"{tagged}: examples: example 1 ({shown!r}) is a line alone, without a name tag such as 'Nova:' in front",
        f"{many}: examples: at most 6 (got 9)",
    ]


def test_check_warns_about_a_persona_without_a_stance_and_still_passes_it(tmp_path: Path) -> None:
    sage = (REPO / "personas" / "sage.toml").read_text(encoding="utf-8")
    plain = tmp_path / "plain.toml"
    plain.write_text(re.sub(r'(?m)^stance = ".*"\n', "", sage), encoding="utf-8")
    result = run_bot("persona", "check", str(plain))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        f"{plain}: ok (sage, Sage)",
        f"{plain}: warning: stance: none; one line of what this persona does when it answers "
        '("pokes holes and asks for numbers") keeps its replies its own',
    ]

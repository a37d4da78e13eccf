"""Bad config and persona files get one clear line naming the file and key, and exit code 2."""

import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import ConfigError, load_config
from personas import PersonaError, load_personas
from tests.conftest import REPO, write_config


def config_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return str(caught.value)


def test_wrong_type_names_file_key_and_expectation(tmp_path):
    message = config_error(tmp_path, '[moderation]\nmax_turns = "six"\n')
    assert (
        message
        == f"{tmp_path / 'bad.toml'}: [moderation] max_turns: expected a valid integer, unable to parse string as an integer, got 'six'"
    )


def test_unknown_and_out_of_range_keys(tmp_path):
    assert config_error(tmp_path, "[review]\nmin_char = 3\n").endswith("[review] min_char: unknown key")
    assert "[moderation] max_turns: expected" in config_error(tmp_path, "[moderation]\nmax_turns = 0\n")
    assert "[llm] provider: expected" in config_error(tmp_path, '[llm]\nprovider = "gpt"\n')
    assert config_error(tmp_path, "[nonsense]\nx = 1\n").endswith("[nonsense]: unknown key")


def test_secrets_are_refused_in_the_file(tmp_path):
    message = config_error(tmp_path, '[llm]\napi_key = "sk-123"\n')
    assert "secrets are read only from the environment" in message and "sk-123" not in message


def test_a_storage_url_must_be_postgresql_and_carry_no_password(tmp_path):
    message = config_error(tmp_path, '[storage]\nurl = "postgresql://bot:hunter2@db/roundtable"\n')
    assert message.endswith("[storage] url: remove the password from the URL and set PGPASSWORD in the environment")
    assert "hunter2" not in message
    assert "[storage] url: expected a postgresql:// URL" in config_error(tmp_path, '[storage]\nurl = "mysql://db/x"\n')


def test_discord_shard_ids_need_the_shared_count_and_must_lie_within_it(tmp_path):
    assert config_error(tmp_path, "[discord]\nshard_ids = [0]\n").endswith(
        "[discord] shard_ids: expected a shard_count above 0 as well (every process sets the same), got [0]"
    )
    message = config_error(tmp_path, "[discord]\nshard_count = 2\nshard_ids = [1, 2]\n")
    assert message.endswith("[discord] shard_ids: expected distinct shard numbers from 0 to 1, got [1, 2]")
    assert "distinct" in config_error(tmp_path, "[discord]\nshard_count = 2\nshard_ids = [1, 1]\n")
    path = write_config(tmp_path, {"discord": {"shard_count": 4, "shard_ids": [2, 3]}})
    discord = load_config(path).settings.discord
    assert (discord.shard_count, discord.shard_ids) == (4, [2, 3])


def test_the_shipped_config_is_valid():
    settings = load_config(REPO / "config.toml").settings
    assert settings.moderation.max_turns == 6 and settings.review.min_chars == 20


def test_every_shipped_config_key_is_commented():
    lines = (REPO / "config.toml").read_text().splitlines()
    for number, line in enumerate(lines):
        if "=" in line and not line.startswith("#"):
            assert lines[number - 1].startswith("#"), f"config.toml line {number + 1} has no comment: {line}"


def write_persona(directory: Path, name: str, body: str) -> None:
    (directory / f"{name}.toml").write_text(body, encoding="utf-8")


GOOD = 'id = "{id}"\ndisplay_name = "{name}"\navatar = ":owl:"\nsystem_prompt = "x"\ntalkativeness = 0.5\n'


def test_persona_errors(tmp_path):
    write_persona(tmp_path, "a", GOOD.format(id="ann", name="Ann"))
    write_persona(tmp_path, "b", GOOD.format(id="ann", name="Bea"))
    with pytest.raises(PersonaError, match=r"b.toml: id: duplicate persona id 'ann' \(also in .*a.toml\)"):
        load_personas(tmp_path)
    write_persona(tmp_path, "b", GOOD.format(id="bea", name="Bea").replace("0.5", "1.5"))
    with pytest.raises(
        PersonaError, match=r"b.toml: talkativeness: Input should be less than or equal to 1 \(got 1.5\)"
    ):
        load_personas(tmp_path)
    write_persona(tmp_path, "b", 'id = "bea"\ndisplay_name = "Bea"\n')
    with pytest.raises(PersonaError, match=r"b.toml: avatar: missing required field"):
        load_personas(tmp_path)


def test_shipped_personas_have_distinct_voices():
    personas = load_personas(REPO / "personas")
    assert len(personas) >= 4
    assert len({p.system_prompt for p in personas.values()}) == len(personas)
    assert any({"publish_post", "send_message"} <= set(p.actions) for p in personas.values())


def test_cli_exits_2_with_one_line_on_bad_config(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[history]\ntoken_budget = "lots"\n')
    result = subprocess.run(
        [sys.executable, "-m", "bot", "--config", str(path), "console", "--script", "/dev/null"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "[history] token_budget: expected" in result.stderr and str(path) in result.stderr


def console_with(path):
    """`python -m bot console` on this config with an empty script: what a bad config prints."""
    return subprocess.run(
        [sys.executable, "-m", "bot", "console", "--config", str(path), "--script", "/dev/null"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


def test_cli_rejects_unknown_default_participant(tmp_path):
    path = write_config(tmp_path, {"bot": {"participants": ["nova", "ghost"]}})
    result = console_with(path)
    assert result.returncode == 2
    assert "[bot] participants: unknown persona 'ghost'" in result.stderr


def test_cli_rejects_a_permission_for_no_command_in_one_line(tmp_path):
    path = write_config(tmp_path, {"permissions": {"moderate_on": ["manager"], "teleport": ["approver"]}})
    result = console_with(path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert f"{path}: [permissions] teleport: unknown command (known: " in result.stderr

from tests.config_reference import REPO, readme_section, reference_table


def test_readme_opens_with_the_two_commands():
    readme = (REPO / "README.md").read_text()
    first_code = readme.split("```")[1]
    assert "make run" in first_code and "make test" in first_code


def test_config_reference_matches_config_toml():
    """Regenerate with `.venv/bin/python -m tests.config_reference` after changing config.toml."""
    expected = reference_table((REPO / "config.toml").read_text())
    assert readme_section((REPO / "README.md").read_text()) == expected

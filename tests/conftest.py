"""Shared fixtures: a throwaway config, data directory and app per test."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import App, PortFor, open_app
from bot.config import Config, load_config
from graph.models.base import Models
from graph.models.chat import ChatModels
from graph.models.factory import ProviderConfig, build_models
from graph.port import OutboundPort
from storage.database import Database, open_database
from tests.postgres_server import PostgresServer
from tests.recording_port import RecordingPort

REPO = Path(__file__).resolve().parent.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--outage-seconds",
        type=float,
        default=4.0,
        help="how long the fake Slack and Discord refuse posts in the outage tests (make chaos: 120)",
    )


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f'"{k}" = {_toml_value(v)}' for k, v in value.items()) + " }"
    return str(value)


def write_config(directory: Path, sections: dict[str, dict[str, Any]] | None = None) -> Path:
    """A config.toml in directory: scripted model, data in directory/data, the repo's personas."""
    merged: dict[str, dict[str, Any]] = {
        "bot": {"personas_dir": str(REPO / "personas")},
        "llm": {"provider": "scripted", "backoff_seconds": 0.0},
        "storage": {"data_dir": str(directory / "data")},
    }
    for section, values in (sections or {}).items():
        merged.setdefault(section, {}).update(values)
    text = "\n".join(
        f"[{section}]\n" + "\n".join(f"{key} = {_toml_value(value)}" for key, value in values.items()) + "\n"
        for section, values in merged.items()
    )
    path = directory / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def run_bot(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """`python -m bot ARGS` with no platform tokens and no input; the finished process."""
    environ = {k: v for k, v in os.environ.items() if k not in ("SLACK_BOT_TOKEN", "DISCORD_TOKEN")}
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


TEST_MODELS_DIR = Path.home() / ".cache" / "roundtable-test"
"""Where the tests' embedded GGUFs are assembled once and kept across runs."""
EMBEDDED_SEED = 7
"""The sampling seed of the tests' embedded models: a test that needs the model to do one thing pins it."""
EMBEDDED_THREADS = 2
"""Their thread count: llama.cpp's sums, hence its samples, depend on it."""
EMBEDDED_PINNED: dict[str, Any] = {"seed": EMBEDDED_SEED, "threads": EMBEDDED_THREADS}
"""The [llm.local] keys that pin a console's embedded model's sampling, as local_models pins it in process."""
EMBEDDED_GEMMA: dict[str, Any] = {
    "model": "gemma-3-270m",
    "cache_dir": str(TEST_MODELS_DIR),
    "max_tokens": 40,
    **EMBEDDED_PINNED,
}
"""The [llm.local] section for tests that need *a* real model: the small Gemma 3 270M."""
EMBEDDED_DEFAULT: dict[str, Any] = {"cache_dir": str(TEST_MODELS_DIR), **EMBEDDED_PINNED}
"""The [llm.local] section for tests of the default embedded model (Qwen2.5-Coder-1.5B-Instruct), with
the shipped reply cap: a tighter one cuts its first sentence, and a reply with no whole sentence is unusable."""


def run_console(config: Path, script: str, *options: str, timeout: float = 120) -> str:
    """`python -m bot console --script` on `script` (one line each) beside config; its transcript.
    No model key reaches it, so provider "auto" means the embedded model."""
    return console_process(config, script, *options, timeout=timeout).stdout


def console_process(config: Path, script: str, *options: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """run_console's finished process, for its log (stderr) too."""
    path = config.parent / "script.txt"
    path.write_text(script, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "bot", "console", "--config", str(config), "--script", str(path), *options],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
        env={k: v for k, v in os.environ.items() if k not in ("GOOGLE_API_KEY", "OPENAI_API_KEY")},
    )
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = PostgresServer.start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
async def any_backend(request: pytest.FixtureRequest) -> str:
    """ "" (SQLite) or a fresh PostgreSQL database. A module runs on both by overriding storage_url with it."""
    if request.param == "sqlite":
        return ""
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return await server.new_database()


@pytest.fixture
def storage_url() -> str:
    """[storage] url for the test's config: "" keeps SQLite in the test's data directory."""
    return ""


Opener = Callable[[], Awaitable[Database]]


@pytest.fixture
async def open_db(storage_url: str, tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens handles on one database (the test's storage_url); two handles stand for two bot processes."""
    opened: list[Database] = []

    async def opener() -> Database:
        db = await open_database(storage_url or tmp_path / "db.sqlite3")
        opened.append(db)
        return db

    yield opener
    for db in opened:
        await db.close()


@pytest.fixture
def make_config(tmp_path: Path, storage_url: str) -> Callable[..., Config]:
    def make(sections: dict[str, dict[str, Any]] | None = None) -> Config:
        storage = {"url": storage_url} if storage_url else {}
        merged = {"storage": storage, **(sections or {})}
        if sections and "storage" in sections:
            merged["storage"] = {**storage, **sections["storage"]}
        return load_config(write_config(tmp_path, merged))

    return make


@pytest.fixture
def port() -> RecordingPort:
    return RecordingPort()


@pytest.fixture
def open_test_app(make_config: Callable[..., Config], port: RecordingPort):
    """`async with open_test_app(sections, models=...) as app:` with a seeded RNG and the recording port."""

    def opener(
        sections: dict[str, dict[str, Any]] | None = None,
        *,
        models: Models | None = None,
        outbound: OutboundPort | PortFor | None = None,
        seed: int = 7,
        **options: Any,
    ) -> Any:
        return open_app(
            make_config(sections), outbound or port, models=models, environ={}, rng=random.Random(seed), **options
        )

    return opener


@pytest.fixture
async def app(open_test_app) -> AsyncIterator[App]:
    async with open_test_app() as opened:
        yield opened


# The Slack harness's fixtures, for every test module that drives the real bolt app.
from tests.discord_harness import fake, open_bot  # noqa: E402, F401
from tests.slack_harness import fake_slack, slack, start_slack  # noqa: E402, F401


@pytest.fixture(scope="module")
def local_models() -> ChatModels:
    """The embedded Gemma 3 270M as the local provider builds it, loaded once per test module; seeded,
    on a fixed thread count, so every call (retries and nudges too) samples the same way run after run."""
    config = ProviderConfig(
        provider="local",
        local_model="gemma-3-270m",
        local_cache_dir=TEST_MODELS_DIR,
        local_threads=EMBEDDED_THREADS,
        local_seed=EMBEDDED_SEED,
    )
    models = build_models(config, {})
    assert isinstance(models, ChatModels)
    return models

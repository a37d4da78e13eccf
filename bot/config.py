"""config.toml: loaded with tomllib, validated with pydantic (bot/settings.py). Secrets never live here,
only in the environment."""

from __future__ import annotations

import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from bot.settings import MODERATOR_PROMPT_LIMIT, Settings

SECRET_ENV_VARS = (
    "GOOGLE_API_KEY",
    "OPENAI_API_KEY",
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "DISCORD_TOKEN",
    "PGPASSWORD",
)


_SECRET_KEY_ENDINGS = ("token", "secret", "api_key", "password")


class ConfigError(ValueError):
    """config.toml is unreadable or invalid. The message is one line naming the file and the key."""


@dataclass(frozen=True)
class Config:
    """Validated settings plus where they came from, with paths resolved against the config file."""

    path: Path
    settings: Settings

    @property
    def data_dir(self) -> Path:
        return self._resolve(self.settings.storage.data_dir)

    @property
    def personas_dir(self) -> Path:
        return self._resolve(self.settings.bot.personas_dir)

    def moderator_prompt(self) -> str:
        """The text of [moderation] prompt_file; "" when none is set. A one-line ConfigError if unreadable."""
        name = self.settings.moderation.prompt_file
        if not name:
            return ""
        path = self._resolve(name)
        text = read_text(path) if path.is_file() else ""
        if not text.strip():
            raise ConfigError(f"{self.path}: [moderation] prompt_file: {path} is missing or empty")
        if len(text) > MODERATOR_PROMPT_LIMIT:
            raise ConfigError(
                f"{self.path}: [moderation] prompt_file: {len(text)} characters; the most is {MODERATOR_PROMPT_LIMIT}"
            )
        return text.strip()

    def _resolve(self, value: str) -> Path:
        path = Path(value).expanduser()
        return path if path.is_absolute() else (self.path.parent / path).resolve()


def _expected(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "missing required key"
    message = error["msg"].removeprefix("Input should be ").removeprefix("Value error, ")
    return f"expected {message}, got {error.get('input')!r}"


def _key_of(loc: tuple) -> str:
    parts = [str(p) for p in loc]
    if len(parts) == 1:
        return f"[{parts[0]}]"
    return f"[{'.'.join(parts[:-1])}] {parts[-1]}"


def _has_password(value: object) -> bool:
    return isinstance(value, str) and "://" in value and urlsplit(value).password is not None


def read_text(path: Path) -> str:
    """A UTF-8 text file's contents; a one-line ConfigError when it cannot be read as one."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None


def load_config(path: Path) -> Config:
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found (pass --config PATH)")
    text = read_text(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    for section, values in raw.items():
        for key in values if isinstance(values, dict) else ():
            if key.lower().endswith(_SECRET_KEY_ENDINGS):
                raise ConfigError(
                    f"{path}: [{section}] {key}: secrets are read only from the environment "
                    f"({', '.join(SECRET_ENV_VARS)}), never from config.toml"
                )
            if _has_password(values[key]):
                raise ConfigError(
                    f"{path}: [{section}] {key}: remove the password from the URL and set PGPASSWORD in the environment"
                )
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"{path}: {_key_of(first['loc'])}: {_expected(first)}") from None
    return Config(path=path.resolve(), settings=settings)


def ensure_data_dir(config: Config) -> Path:
    """[storage] data_dir, created if missing; a one-line ConfigError when it cannot be a place to write."""
    data_dir = config.data_dir
    where = f"{config.path}: [storage] data_dir {str(data_dir)!r}"
    if data_dir.exists() and not data_dir.is_dir():
        raise ConfigError(f"{where} is a file, not a directory")
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=data_dir):
            pass
    except OSError as exc:
        raise ConfigError(f"{where} is not a writable directory ({exc.strerror or type(exc).__name__})") from None
    return data_dir

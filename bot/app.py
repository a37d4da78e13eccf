"""Wiring: config, personas, storage, checkpointer, models, engine and service, opened and closed together."""

from __future__ import annotations

import os
import random
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from bot.config import Config, ConfigError
from bot.service import ChannelDefaults, ChannelService
from bot.timers import DurableTimers
from graph.deps import EngineDeps
from graph.engine import RoundEngine
from graph.models.base import Models
from graph.models.factory import ProviderConfig, build_models
from graph.policy import PolicySettings
from graph.port import OutboundPort
from graph.settings import EngineSettings
from personas import Persona, load_personas
from storage.database import Database

DATABASE_FILE = "roundtable.sqlite3"
CHECKPOINT_FILE = "checkpoints.sqlite3"
TIMERS_FILE = "timers.sqlite3"


@dataclass
class App:
    config: Config
    personas: Mapping[str, Persona]
    db: Database
    models: Models
    engine: RoundEngine
    service: ChannelService
    timers: DurableTimers


def provider_config(config: Config) -> ProviderConfig:
    llm = config.settings.llm
    cache_dir = Path(llm.local.cache_dir).expanduser() if llm.local.cache_dir else config.data_dir / "models"
    return ProviderConfig(
        provider=llm.provider,
        model=llm.model,
        moderator_model=llm.moderator_model,
        requests_per_minute=llm.requests_per_minute,
        model_requests_per_minute=dict(llm.model_requests_per_minute),
        base_url=llm.base_url,
        timeout_seconds=llm.timeout_seconds,
        local_threads=llm.local.threads,
        local_context_size=llm.local.context_size,
        local_max_tokens=llm.local.max_tokens,
        local_cache_dir=cache_dir,
    )


def engine_settings(config: Config) -> EngineSettings:
    s = config.settings
    return EngineSettings(
        max_turns=s.moderation.max_turns,
        token_budget=s.history.token_budget,
        min_chars=s.review.min_chars,
        model_attempts=s.llm.max_attempts,
        backoff_seconds=s.llm.backoff_seconds,
        approval_timeout_seconds=s.approvals.timeout_minutes * 60,
    )


def policy_settings(config: Config) -> PolicySettings:
    a = config.settings.approvals
    return PolicySettings(sensitive=tuple(a.sensitive), max_actions_per_turn=a.max_actions_per_turn, auto_relax=a.auto_relax)


def load_checked_personas(config: Config) -> dict[str, Persona]:
    personas = load_personas(config.personas_dir)
    unknown = [p for p in config.settings.bot.participants if p not in personas]
    if unknown:
        raise ConfigError(
            f"{config.path}: [bot] participants: unknown persona {unknown[0]!r} (known: {', '.join(personas)})"
        )
    return personas


@asynccontextmanager
async def open_app(
    config: Config,
    port: OutboundPort,
    *,
    models: Models | None = None,
    environ: Mapping[str, str] = os.environ,
    rng: random.Random | None = None,
) -> AsyncIterator[App]:
    personas = load_checked_personas(config)
    models = models or build_models(provider_config(config), environ)
    config.data_dir.mkdir(parents=True, exist_ok=True)
    db = await Database.open(config.data_dir / DATABASE_FILE)
    timers = DurableTimers(config.data_dir / TIMERS_FILE)
    try:
        async with AsyncSqliteSaver.from_conn_string(str(config.data_dir / CHECKPOINT_FILE)) as checkpointer:
            deps = EngineDeps(
                db=db,
                personas=personas,
                models=models,
                port=port,
                settings=engine_settings(config),
                rng=rng or random.Random(),
                policy=policy_settings(config),
                timers=timers,
            )
            engine = RoundEngine(deps, checkpointer)
            service = ChannelService(
                db=db,
                engine=engine,
                personas=personas,
                port=port,
                defaults=ChannelDefaults(
                    participants=config.settings.bot.participants, moderated=config.settings.moderation.enabled
                ),
                approvers_for=config.settings.approvals.approvers_for,
            )
            timers.start(service)
            yield App(config=config, personas=personas, db=db, models=models, engine=engine, service=service, timers=timers)
            await service.wait_idle()
    finally:
        timers.shutdown()
        await db.close()

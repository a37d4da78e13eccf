"""Wiring: config, personas, storage, checkpointer, models, engine and service, opened and closed together."""

from __future__ import annotations

import asyncio
import gc
import os
import random
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from bot.config import Config, ConfigError
from bot.flood import FloodGate
from bot.mcp_servers import McpServers, known_tools
from bot.ops import Readiness, model_check, storage_check
from bot.outbox import Outbox, outbox_settings, platforms_sent_by
from bot.permissions import Permissions, unknown_permission
from bot.persistence import Persistence, open_persistence
from bot.recovery import recover
from bot.service import ChannelDefaults, ChannelService
from bot.slack.keys import channel_id_of
from bot.timers import DurableTimers
from bot.usage import TokenBook
from bot.votes import Votes, persona_model
from graph.actions import ACTIONS
from graph.deps import EngineDeps
from graph.engine import RoundEngine
from graph.models.base import Models
from graph.models.chat import ChatModels
from graph.models.factory import ProviderConfig, build_models
from graph.policy import PolicySettings
from graph.port import OutboundPort
from graph.prompt import prompt_budget
from graph.risk import Risk
from graph.settings import EngineSettings, MemorySettings
from personas import Persona, load_personas
from storage.database import Database

T = TypeVar("T")

FULL_COLLECTION_EVERY = 100  # young-generation collections between full ones (CPython's default: 10)


@dataclass
class App:
    config: Config
    personas: Mapping[str, Persona]
    db: Database
    models: Models
    engine: RoundEngine
    service: ChannelService
    timers: DurableTimers
    readiness: Readiness  # what /readyz checks: storage and model here; platforms (and MCP) add theirs
    outbox: Outbox
    votes: Votes
    mcp: McpServers | None = None


def provider_config(config: Config) -> ProviderConfig:
    llm = config.settings.llm
    cache_dir = Path(llm.local.cache_dir).expanduser() if llm.local.cache_dir else config.data_dir / "models"
    return ProviderConfig(
        provider=llm.provider,
        model=llm.model,
        moderator_model=llm.moderator_model,
        judge_model=config.settings.review.judge_model,
        summary_model=config.settings.memory.summary_model,
        thinking=llm.thinking,
        moderator_thinking=llm.moderator_thinking,
        max_output_tokens=llm.max_output_tokens,
        requests_per_minute=llm.requests_per_minute,
        model_requests_per_minute=dict(llm.model_requests_per_minute),
        base_url=llm.base_url,
        timeout_seconds=llm.timeout_seconds,
        local_model=llm.local.model,
        local_threads=llm.local.threads,
        local_context_size=llm.local.context_size,
        local_max_tokens=llm.local.max_tokens,
        local_cache_dir=cache_dir,
        local_seed=None if llm.local.seed < 0 else llm.local.seed,
    )


def default_persona_model(config: Config, models: Models) -> str:
    """The model a persona without its own writes with ([llm] model, or [llm.local] model embedded)."""
    if not isinstance(models, ChatModels):
        return type(models).__name__  # a scripted or test double
    return config.settings.llm.local.model if models.provider == "local" else config.settings.llm.model


def engine_settings(config: Config, models: Models) -> EngineSettings:
    s = config.settings
    embedded = isinstance(models, ChatModels) and models.provider == "local"
    return EngineSettings(
        max_turns=s.moderation.max_turns,
        token_budget=prompt_budget(
            s.history.token_budget, s.llm.local.context_size if embedded else None, s.llm.local.max_tokens
        ),
        min_chars=s.review.min_chars,
        max_sentences=s.review.max_sentences,
        judge=s.review.judge == "on",
        model_attempts=s.llm.max_attempts,
        backoff_seconds=s.llm.backoff_seconds,
        approval_timeout_seconds=s.approvals.timeout_minutes * 60,
        show_reasons=s.moderation.show_reasons,
        moderator_prompt=config.moderator_prompt(),
        recruit=s.moderation.recruit,
        team_cap=s.moderation.team_cap,
        mailbox_max_pending=s.mailbox.max_pending,
        max_task_steps=s.tasks.max_steps,
        max_artifact_chars=s.tasks.max_artifact_chars,
        task_integrator=s.tasks.integrator,
        max_parallel_steps=s.tasks.max_parallel_steps,
        step_attempts=s.tasks.step_attempts,
        failure_threshold={str(kind): share for kind, share in s.tasks.failure_threshold.items()},
        max_replans=s.tasks.max_replans,
        failures_before_pause=s.approvals.failures_before_pause,
        timezone=s.bot.timezone,
        memory=MemorySettings(
            max_notes=s.memory.max_notes,
            share_notes=s.memory.share_notes,
            summary_tokens=s.memory.summary_tokens,
            summaries=s.memory.summaries,
        ),
        max_tool_steps=s.actions.max_steps,
    )


def policy_settings(config: Config) -> PolicySettings:
    a = config.settings.approvals
    return PolicySettings(
        sensitive=tuple(a.sensitive),
        max_actions_per_turn=a.max_actions_per_turn,
        auto_relax=a.auto_relax,
        trust_sets_mode=a.trust_sets_mode,
        max_cost=a.max_cost,
        min_confidence=a.min_confidence,
        action_costs=dict(a.action_costs),
        announce_immediate=config.settings.actions.announce_immediate,
        auto_approve_risk=None if a.auto_approve_risk == "none" else Risk(a.auto_approve_risk),
    )


def load_checked_personas(config: Config) -> dict[str, Persona]:
    personas = load_personas(config.personas_dir, known_actions=ACTIONS, known_tools=known_tools(config))
    unknown = [p for p in config.settings.bot.participants if p not in personas]
    if unknown:
        raise ConfigError(
            f"{config.path}: [bot] participants: unknown persona {unknown[0]!r} (known: {', '.join(personas)})"
        )
    return personas


PortFor = Callable[[Database], OutboundPort]
"""Builds the outbound port once storage is open: adapters keep where requests were posted there."""


@asynccontextmanager
async def open_app(
    config: Config,
    port: OutboundPort | PortFor,
    *,
    models: Models | None = None,
    environ: Mapping[str, str] = os.environ,
    rng: random.Random | None = None,
    clock: Callable[[], float] = time.time,
    persistence: Callable[[Config], AbstractAsyncContextManager[Persistence]] = open_persistence,
) -> AsyncIterator[App]:
    """`persistence` opens the storage: the config's own, or one a benchmark keeps in memory."""
    if (problem := unknown_permission(config.settings.permissions)) is not None:
        raise ConfigError(f"{config.path}: {problem}")
    personas = load_checked_personas(config)
    models = models or build_models(provider_config(config), environ)
    config.data_dir.mkdir(parents=True, exist_ok=True)
    catalog = McpServers.catalog_for(config)
    servers = (
        McpServers(config, catalog) if config.settings.mcp.servers else None
    )  # env values: the process environment
    if isinstance(models, ChatModels):
        models.use_tools(catalog)
    async with persistence(config) as stored:
        if callable(port):  # persistence first, then the adapters on it: nothing is set up in two phases
            port = port(stored.db)
        # What is posted on Slack and Discord is stored, then sent (bot/outbox.py).
        outbox = Outbox(port, stored.db, personas, outbox_settings(config), platforms=platforms_sent_by(port))
        votes = Votes(stored.db, personas, persona_model(default_persona_model(config, models)), clock)
        outbox.sent_hooks.append(votes.note_sent)  # a persona's post is noted for the reactions it gets
        limits = config.settings.limits
        tokens = TokenBook(stored.db, limits.channel_tokens_per_day, clock)
        deps = EngineDeps(
            db=stored.db,
            personas=personas,
            models=models,
            port=outbox,
            settings=engine_settings(config, models),
            rng=rng or random.Random(),
            policy=policy_settings(config),
            timers=stored.timers,
            tools=catalog,
            mcp=servers,
            budget=tokens.refusal,
            budget_spent=tokens.spent,  # the task runner checks it before each step
        )
        engine = RoundEngine(deps, stored.checkpointer)
        if isinstance(models, ChatModels):
            models.watch(tokens.record)  # every model call timed, counted and its usage stored
        service = ChannelService(
            db=stored.db,
            engine=engine,
            personas=personas,
            port=outbox,
            settled=outbox.settled,
            defaults=ChannelDefaults(
                participants=config.settings.bot.participants,
                moderated=config.settings.moderation.enabled,
                session_gap_hours=config.settings.history.session_gap_hours,
            ),
            is_approver=config.settings.approvals.is_approver,
            approvals_surface=config.settings.approvals.surface,
            max_rounds_at_once=config.settings.storage.max_rounds_at_once,
            flood=FloodGate(limits.user_messages_per_minute, limits.channel_rounds_per_minute),
            auto_detect_tasks=config.settings.tasks.auto_detect,
            permissions=Permissions(
                config.settings.permissions,
                manager_role=config.settings.discord.manager_role,
                slack_managers=bool(config.settings.slack.managers),
            ),
            tokens=tokens,
            votes=votes,
            mcp=servers,
            approvals_channel=partial(is_approvals_channel, config.settings.slack.approvals_channel),
        )
        readiness = Readiness()
        readiness.add("storage", storage_check(stored.db))
        readiness.add("model", model_check(models))
        if servers is not None:  # each configured MCP server answers its supervisor's pings
            for name in servers.names():
                readiness.add(f"mcp {name}", partial(servers.not_ready, name))
        await stored.timers.start(service.approval_desk)
        async with outbox.sending(config.settings.bot.shutdown_grace_seconds):
            try:
                if servers is not None:
                    await servers.start()
                await recover(service)
                # Everything loaded so far lives as long as the app: moving it out of the collector's
                # reach stops full collections from pausing the event loop for ~100 ms under load.
                gc.collect()
                gc.freeze()
                # A full collection also walks every round in flight: during a burst of 200 rounds one
                # took 30-70 ms, once per burst. A tenth as often (after 100 young collections, not 10).
                gc.set_threshold(*gc.get_threshold()[:2], FULL_COLLECTION_EVERY)
                yield App(
                    config=config,
                    personas=personas,
                    db=stored.db,
                    models=models,
                    engine=engine,
                    service=service,
                    timers=stored.timers,
                    readiness=readiness,
                    outbox=outbox,
                    votes=votes,
                    mcp=servers,
                )
                await service.wait_idle()
            finally:
                # After a stop signal: running rounds get the grace period, queued work waits durably;
                # then the outbox sends what is due within its own grace period.
                await service.drain(config.settings.bot.shutdown_grace_seconds)
                if servers is not None:
                    await servers.stop()
                await tokens.close()
                await stored.timers.shutdown()


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run the bot's top coroutine to the end on the event loop it runs on: uvloop's where it is
    installed (Linux and macOS: every callback a turn schedules costs less), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


def is_approvals_channel(approvals_channel: str, key: str) -> bool:
    """Whether a channel key is the configured [slack] approvals_channel: its ID (a name given there is
    resolved to the ID when Slack starts, bot/slack/runner.py)."""
    return bool(approvals_channel) and channel_id_of(key) == approvals_channel.lstrip("#")

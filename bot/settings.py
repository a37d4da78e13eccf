"""config.toml's sections and their limits, as pydantic models; bot/config.py reads the file into them.

Every module that reads a setting imports its section from here. Secrets are never a setting: they
live only in the environment (bot/config.py refuses a key that looks like one).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from bot.avatars import TWEMOJI_BASE_URL
from bot.slack.keys import channel_key_of
from graph.actions import ACTIONS
from graph.models.factory import DEFAULT_MODEL, DEFAULT_MODERATOR_MODEL
from graph.models.gguf import DEFAULT_LOCAL_MODEL, LOCAL_MODELS

MODERATOR_PROMPT_LIMIT = 2000  # characters, as for /moderate prompt


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BotSection(_Section):
    participants: list[str] = Field(default_factory=lambda: ["nova", "sage", "rex"], min_length=1)
    console_user: Annotated[str, Field(min_length=1, max_length=40)] = "you"
    shutdown_grace_seconds: Annotated[float, Field(ge=0, le=300)] = 20
    personas_dir: str = "personas"
    timezone: str = "UTC"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, zone: str) -> str:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"an IANA time zone such as Europe/Paris or UTC, not {zone[:60]!r}") from None
        return zone


class ModerationSection(_Section):
    enabled: bool = False
    max_turns: Annotated[int, Field(ge=1, le=50)] = 6
    show_reasons: bool = False
    prompt_file: str = ""
    recruit: bool = False
    team_cap: Annotated[int, Field(ge=1, le=10)] = 10


Thinking = Literal["", "minimal", "low", "medium", "high"]


class LocalModelSection(_Section):
    model: str = DEFAULT_LOCAL_MODEL
    threads: Annotated[int, Field(ge=1, le=64)] = 2
    context_size: Annotated[int, Field(ge=256, le=32768)] = 2048
    max_tokens: Annotated[int, Field(ge=8, le=1024)] = 96
    cache_dir: str = ""
    seed: Annotated[int, Field(ge=-1, lt=2**31)] = -1  # -1: a random seed for every call

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        if value not in LOCAL_MODELS:
            raise ValueError(f"expected one of {', '.join(LOCAL_MODELS)}")
        return value


class LlmSection(_Section):
    provider: Literal["auto", "local", "gemini", "openai", "scripted"] = "auto"
    model: Annotated[str, Field(min_length=1)] = DEFAULT_MODEL
    moderator_model: Annotated[str, Field(min_length=1)] = DEFAULT_MODERATOR_MODEL
    thinking: Thinking = ""
    moderator_thinking: Thinking = ""
    max_output_tokens: Annotated[int, Field(ge=0, le=1_000_000)] = 0
    requests_per_minute: Annotated[float, Field(gt=0)] = 60
    model_requests_per_minute: dict[str, Annotated[float, Field(gt=0)]] = Field(default_factory=dict)
    base_url: str = ""
    timeout_seconds: Annotated[float, Field(gt=0)] = 60
    max_attempts: Annotated[int, Field(ge=1, le=10)] = 4
    backoff_seconds: Annotated[float, Field(ge=0)] = 1.0
    local: LocalModelSection = LocalModelSection()

    def rpm_for(self, model: str) -> float:
        return self.model_requests_per_minute.get(model, self.requests_per_minute)


class StorageSection(_Section):
    data_dir: str = "data"
    url: str = ""
    max_rounds_at_once: Annotated[int, Field(ge=1, le=10_000)] = 200

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, url: str) -> str:
        if not url:
            return url
        if urlsplit(url).scheme not in ("postgresql", "postgres"):
            raise ValueError('a postgresql:// URL, or "" for SQLite in data_dir')
        return url


class HistorySection(_Section):
    token_budget: Annotated[int, Field(ge=200, le=1_000_000)] = 3000
    session_gap_hours: Annotated[float, Field(ge=0, le=24 * 365)] = 6


class ReviewSection(_Section):
    min_chars: Annotated[int, Field(ge=0, le=2000)] = 20
    max_sentences: Annotated[int, Field(ge=1, le=50)] = 3
    judge: Literal["off", "on"] = "off"
    judge_model: str = ""


class LimitsSection(_Section):
    user_messages_per_minute: Annotated[int, Field(ge=1, le=10_000)] = 12
    channel_rounds_per_minute: Annotated[int, Field(ge=1, le=10_000)] = 20
    channel_tokens_per_day: Annotated[int, Field(ge=0)] = 0


class OpsSection(_Section):
    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 0


class TelemetrySection(_Section):
    otlp_endpoint: str = ""
    include_text: bool = False


class LoggingSection(_Section):
    format: Literal["text", "json"] = "text"


class SlackSection(_Section):
    api_base_url: str = "https://slack.com/api/"
    host: str = "0.0.0.0"
    port: Annotated[int, Field(ge=0, le=65535)] = 3000
    approvals_channel: str = ""
    thinking_reaction: str = "hourglass_flowing_sand"
    managers: list[str] = Field(default_factory=list)  # user ids that manage channels, besides admins and owners


class DiscordSection(_Section):
    api_base_url: str = "https://discord.com/api/v10"
    gateway_url: str = ""
    manager_role: str = ""  # a role id: names are not unique
    twemoji_base_url: str = TWEMOJI_BASE_URL
    shard_count: Annotated[int, Field(ge=0, le=65_536)] = 0  # 0: as many as GET /gateway/bot recommends
    shard_ids: list[int] = Field(default_factory=list)  # empty: every shard, in this process

    @field_validator("manager_role")
    @classmethod
    def _role_id(cls, role: str) -> str:
        if role and not (role.isdigit() and role.isascii() and len(role) <= 20):
            raise ValueError(
                "a role id (digits: Copy Role ID in Discord's developer mode), not a name, which anyone "
                "who may create roles could take"
            )
        return role

    @field_validator("shard_ids")
    @classmethod
    def _shards_of_the_count(cls, shard_ids: list[int], info: ValidationInfo) -> list[int]:
        count = info.data.get("shard_count", 0)
        if shard_ids and not count:
            raise ValueError("a shard_count above 0 as well (every process sets the same)")
        if any(not 0 <= shard < count for shard in shard_ids) or len(set(shard_ids)) != len(shard_ids):
            raise ValueError(f"distinct shard numbers from 0 to {count - 1}")
        return shard_ids


class ApprovalsSection(_Section):
    timeout_minutes: Annotated[float, Field(gt=0, le=7 * 24 * 60)] = 30
    sensitive: list[str] = Field(default_factory=lambda: ["publish", "send", "schedule", "delete", "pay", "share"])
    max_actions_per_turn: Annotated[int, Field(ge=1, le=20)] = 3
    auto_relax: bool = False
    trust_sets_mode: bool = False
    approvers: dict[Literal["console", "slack", "discord"], list[str]] = Field(
        default_factory=lambda: {"console": ["you"]}  # type: ignore[arg-type]  # pydantic validates the keys
    )
    channel_approvers: dict[str, list[str]] = Field(default_factory=dict)
    surface: Literal["same", "slack"] = "same"
    max_cost: Annotated[float, Field(ge=0)] = math.inf
    action_costs: dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]] = Field(default_factory=dict)
    min_confidence: Annotated[float, Field(ge=0, le=1)] = 0.0
    auto_approve_risk: Literal["none", "low", "medium", "high", "critical"] = "none"
    # Counts model failures in a row (not approvals); it lives here because only an approver resumes.
    failures_before_pause: Annotated[int, Field(ge=0, le=100)] = 5

    @field_validator("action_costs")
    @classmethod
    def _known_actions(cls, costs: dict[str, float]) -> dict[str, float]:
        unknown = sorted(name for name in set(costs) - set(ACTIONS) if "." not in name)  # "SERVER.TOOL": an MCP tool
        if unknown:
            raise ValueError(f"action names ({', '.join(ACTIONS)}) or MCP tools as SERVER.TOOL")
        return costs

    def approvers_for(self, channel_key: str) -> set[str]:
        """Channel-specific approvers when configured (a Slack thread has its channel's), else the platform's."""
        for key in (channel_key, channel_key_of(channel_key)):
            if key in self.channel_approvers:
                return set(self.channel_approvers[key])
        platform = channel_key.split(":", 1)[0]
        return set(self.approvers.get(platform, []))  # type: ignore[call-overload]

    def is_approver(self, channel_key: str, user_id: str, team: str | None = None) -> bool:
        """Whether this user may decide approvals in the channel. Slack user ids are unique only within a
        workspace, so there a user is a team and an id: "U456" is U456 of the channel's own workspace
        (the one in its key, "slack:T123:C789"), and "T999:U456" is U456 of workspace T999."""
        listed = self.approvers_for(channel_key)
        platform, _, place = channel_key.partition(":")
        if platform != "slack":
            return user_id in listed
        channel_team = place.partition(":")[0]
        return team is not None and (team, user_id) in {slack_approver(entry, channel_team) for entry in listed}


def slack_approver(entry: str, channel_team: str) -> tuple[str, str]:
    """(team, user id) of an approvers entry, "U456" or "T999:U456", in a channel of channel_team."""
    team, _, user = entry.rpartition(":")
    return team or channel_team, user


Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
TaskKind = Literal["research", "writing", "actions"]


def _default_thresholds() -> dict[TaskKind, float]:
    return {"research": 0.5, "writing": 0.2, "actions": 0.0}


class TasksSection(_Section):
    auto_detect: bool = False
    max_steps: Annotated[int, Field(ge=1, le=20)] = 8
    max_artifact_chars: Annotated[int, Field(ge=200, le=100_000)] = 4000
    integrator: str = ""
    max_parallel_steps: Annotated[int, Field(ge=1, le=10)] = 3
    step_attempts: Annotated[int, Field(ge=1, le=10)] = 3
    failure_threshold: dict[TaskKind, Share] = Field(default_factory=_default_thresholds)
    max_replans: Annotated[int, Field(ge=0, le=10)] = 2


class MailboxSection(_Section):
    max_pending: Annotated[int, Field(ge=1, le=1000)] = 5


class MemorySection(_Section):
    max_notes: Annotated[int, Field(ge=1, le=200)] = 20
    share_notes: Literal["channel", "persona"] = "channel"
    summaries: bool = True
    summary_model: str = ""
    summary_tokens: Annotated[int, Field(ge=50, le=4000)] = 400


_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


RiskLevel = Literal["low", "medium", "high", "critical"]


class McpServerSection(_Section):
    """One MCP server: a stdio child process (`command`) or a streamable HTTP endpoint (`url`)."""

    command: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    url: str = ""
    env: list[Annotated[str, Field(pattern=_ENV_NAME)]] = Field(
        default_factory=list
    )  # names only: values stay in the environment
    read_only: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = 30
    # One risk for every tool of the server, or one per tool ({ TOOL = "low" }); unset: graph/risk.py's default.
    risk: RiskLevel | dict[Annotated[str, Field(min_length=1)], RiskLevel] | None = None
    # The tool that takes a call of another back: { TOOL = "OTHER_TOOL" } (`/task cancel rollback`).
    undo: dict[Annotated[str, Field(min_length=1)], Annotated[str, Field(min_length=1)]] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if url and urlsplit(url).scheme not in ("http", "https"):
            raise ValueError("an http:// or https:// URL of a streamable HTTP endpoint")
        return url

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSection:
        if bool(self.command) == bool(self.url):
            raise ValueError("either command (a stdio server) or url (streamable HTTP), not both")
        return self


class McpSection(_Section):
    max_result_chars: Annotated[int, Field(ge=100, le=200_000)] = 4000
    servers: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")], McpServerSection] = Field(
        default_factory=dict
    )


class ActionsSection(_Section):
    max_steps: Annotated[int, Field(ge=1, le=20)] = 4
    announce_immediate: bool = False


class OutboxSection(_Section):
    give_up_after_minutes: Annotated[float, Field(gt=0, le=10080)] = 60
    max_retry_seconds: Annotated[float, Field(gt=0, le=3600)] = 60
    claim_seconds: Annotated[float, Field(ge=5, le=3600)] = 60


class Settings(_Section):
    bot: BotSection = BotSection()
    moderation: ModerationSection = ModerationSection()
    llm: LlmSection = LlmSection()
    storage: StorageSection = StorageSection()
    history: HistorySection = HistorySection()
    review: ReviewSection = ReviewSection()
    limits: LimitsSection = LimitsSection()
    slack: SlackSection = SlackSection()
    discord: DiscordSection = DiscordSection()
    approvals: ApprovalsSection = ApprovalsSection()
    actions: ActionsSection = ActionsSection()
    mailbox: MailboxSection = MailboxSection()
    memory: MemorySection = MemorySection()
    tasks: TasksSection = TasksSection()
    mcp: McpSection = McpSection()
    ops: OpsSection = OpsSection()
    telemetry: TelemetrySection = TelemetrySection()
    logging: LoggingSection = LoggingSection()
    outbox: OutboxSection = OutboxSection()
    # A command's name, or name_verb ("moderate_prompt" for /moderate prompt), to whom it is open: [] anyone, or any of
    # "manager" and "approver" (both: someone who is both). Unlisted commands keep their defaults.
    permissions: dict[str, list[Literal["manager", "approver"]]] = Field(default_factory=dict)

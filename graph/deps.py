"""What the round's nodes work with. Built once by bot/ and handed to the graph."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from graph.mcp import McpClient, ToolCatalog
from graph.models.base import Models
from graph.policy import PolicySettings
from graph.port import OutboundPort, Timers
from graph.settings import EngineSettings
from personas import Persona
from storage.database import Database


@dataclass
class EngineDeps:
    db: Database
    personas: Mapping[str, Persona]
    models: Models
    port: OutboundPort
    settings: EngineSettings = field(default_factory=EngineSettings)
    rng: random.Random = field(default_factory=random.Random)
    policy: PolicySettings = field(default_factory=PolicySettings)
    timers: Timers | None = None
    tools: ToolCatalog | None = None  # what the MCP servers offer (bot/mcp_servers.py fills it)
    mcp: McpClient | None = None  # runs MCP tool calls
    budget_spent: Callable[[str], Awaitable[bool]] | None = None  # a channel's daily model tokens are used up
    # Past the channel's daily token budget: its notice (once a day, else ""); None within it.
    budget: Callable[[str], Awaitable[str | None]] | None = None

"""The MCP servers of config.toml ([mcp.servers.NAME]): started with the bot, kept running, stopped
on shutdown; their tools listed into the graph's ToolCatalog, and calls carried out on them.

A stdio server is a child process in its own process group (the mcp SDK's stdio client starts it
in a new session and stops the whole group); a streamable HTTP server is reached at its URL. Each
server has one supervising task: connect, list the tools, then ping until the session fails; then
mark it down and connect again after a backoff (1 s doubling to a minute). While a server is down,
its tools answer with a tool error (graph/action_runner.py tells the channel once).

Servers come only from config. A stdio child starts in the data directory (not the config
directory, where `.env` usually sits) with only the environment variables its section names (plus
the mcp SDK's PATH, HOME, USER, LOGNAME, SHELL and TERM), their values passed exactly as they are
(never `${VAR}`-expanded); they are read from the environment at start, and masked in the log
(bot/telemetry.py); only their names appear anywhere.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator, Collection, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from langchain_mcp_adapters.sessions import StreamableHttpConnection, create_session
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from bot.config import Config
from bot.settings import McpServerSection
from graph.mcp import McpOutcome, McpTool, ToolCatalog, describe_result
from personas import Persona

log = logging.getLogger(__name__)

PING_SECONDS = 2.0  # how often a running server is checked
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 60.0
LISTING_FILE = "mcp-tools.json"  # in the data directory: what `roundtable persona check` checks tool names against


@dataclass
class _Server:
    name: str
    section: McpServerSection
    session: ClientSession | None = None
    state: str = "starting"
    outages: int = 0
    failed: asyncio.Event = field(default_factory=asyncio.Event)  # a call saw the session break


class McpServers:
    """Implements graph.mcp.McpClient for the configured servers."""

    def __init__(self, config: Config, catalog: ToolCatalog, environ: Mapping[str, str] = os.environ) -> None:
        settings = config.settings.mcp
        self.catalog = catalog
        self.max_result_chars = settings.max_result_chars
        self._servers = {name: _Server(name, section) for name, section in settings.servers.items()}
        self._environ = environ
        self._cwd = config.data_dir
        self._listing = config.data_dir / LISTING_FILE
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    @staticmethod
    def catalog_for(config: Config) -> ToolCatalog:
        servers = config.settings.mcp.servers
        return ToolCatalog(
            {name: s.read_only for name, s in servers.items()},
            risks={name: s.risk for name, s in servers.items() if s.risk is not None},
            undos={name: s.undo for name, s in servers.items()},
        )

    def names(self) -> list[str]:
        return list(self._servers)

    def state(self, server: str) -> str:
        return self._servers[server].state

    def outage(self, server: str) -> int:
        return self._servers[server].outages

    async def not_ready(self, server: str) -> str | None:
        """/readyz (bot/ops.py): None while the server answers its supervisor's pings, else why not."""
        state = self._servers[server].state
        return None if state == "up" else f"not reachable ({state})"

    async def start(self, wait_seconds: float = 10.0) -> None:
        """Start every server, and wait (a while) until each has listed its tools or failed once."""
        self._cwd.mkdir(parents=True, exist_ok=True)  # the stdio children's working directory
        for server in self._servers.values():
            self._tasks.append(asyncio.create_task(self._supervise(server), name=f"mcp:{server.name}"))
        deadline = asyncio.get_running_loop().time() + wait_seconds
        while any(s.state == "starting" for s in self._servers.values()):
            if asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        """Stop every server: each supervisor leaves its session, which ends a stdio child's process group."""
        self._stopping = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    @asynccontextmanager
    async def _session(self, section: McpServerSection) -> AsyncIterator[ClientSession]:
        if section.url:
            http: StreamableHttpConnection = {
                "transport": "streamable_http",
                "url": section.url,
                "timeout": section.timeout_seconds,
            }
            async with create_session(http) as session:
                yield session
            return
        # The SDK's own stdio client: langchain's would expand `${VAR}` in the values from our environment.
        child = StdioServerParameters(
            command=section.command[0],
            args=list(section.command[1:]),
            env={name: self._environ[name] for name in section.env if name in self._environ},
            cwd=self._cwd,
        )
        async with stdio_client(child) as (read, write), ClientSession(read, write) as session:
            yield session

    async def _supervise(self, server: _Server) -> None:
        backoff = FIRST_BACKOFF
        while True:
            try:
                async with self._session(server.section) as session:
                    await asyncio.wait_for(session.initialize(), server.section.timeout_seconds)
                    listed = await asyncio.wait_for(load_mcp_tools(session), server.section.timeout_seconds)
                    self.catalog.update(server.name, [_tool(server.name, t) for t in listed])
                    self._save_listing()
                    server.session, server.state = session, "up"
                    server.failed.clear()
                    backoff = FIRST_BACKOFF
                    log.info("MCP server %s is up with %d tools", server.name, len(listed))
                    await self._watch(server, session)
            except asyncio.CancelledError:
                server.session, server.state = None, "stopped"
                raise
            except Exception as exc:  # a server that cannot start or dies: restart it below
                if self._stopping:  # the stdio client may end our cancellation as anyio's BrokenResourceError
                    server.session, server.state = None, "stopped"
                    return
                log.warning("MCP server %s stopped: %s", server.name, _reason(exc))
            if server.session is not None or server.state == "starting":
                server.outages += 1
            server.session = None
            server.state = f"down (restarting in {backoff:g} s)"
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)
            server.state = "restarting"

    async def _watch(self, server: _Server, session: ClientSession) -> None:
        """Until the session fails: a ping that does not answer, or a call that saw it break."""
        while True:
            try:
                await asyncio.wait_for(server.failed.wait(), PING_SECONDS)
                raise ConnectionError("a call found the connection closed")
            except TimeoutError:
                pass
            await asyncio.wait_for(session.send_ping(), server.section.timeout_seconds)

    async def call(
        self, server: str, tool: str, args: dict[str, Any], timeout_seconds: float | None = None
    ) -> McpOutcome:
        known = self._servers.get(server)
        if known is None:
            return McpOutcome(False, f"failed: no MCP server {server} is configured", "failed: unknown server")
        session = known.session
        if session is None:
            down = f"failed: the MCP server {server} is down ({known.state}); try again later"
            return McpOutcome(False, down, f"failed: server {server} down", server_down=True)
        timeout = timeout_seconds or known.section.timeout_seconds
        try:
            result = await asyncio.wait_for(
                session.call_tool(tool, args, read_timeout_seconds=timedelta(seconds=timeout)), timeout + 1
            )
        except TimeoutError:
            return McpOutcome(False, f"failed: {tool} timed out after {timeout:g} s", "failed: timed out")
        except Exception as exc:
            if "timed out" in str(exc).lower():
                return McpOutcome(False, f"failed: {tool} timed out after {timeout:g} s", "failed: timed out")
            known.failed.set()
            known.session, known.state = None, "down (connection lost)"
            known.outages += 1
            lost = f"failed: the MCP server {server} stopped answering ({type(exc).__name__}); it is being restarted"
            return McpOutcome(False, lost, f"failed: server {server} down", server_down=True)
        content = [item.model_dump(mode="json") for item in result.content]
        return describe_result(
            content, is_error=bool(result.isError), max_chars=self.max_result_chars, structured=result.structuredContent
        )

    def _save_listing(self) -> None:
        listing = {
            name: [t.name for t in tools] for name, tools in self.catalog.servers.items() if self.catalog.listed(name)
        }
        try:
            self._listing.parent.mkdir(parents=True, exist_ok=True)
            self._listing.write_text(json.dumps(listing, indent=1), encoding="utf-8")
        except OSError as exc:
            log.warning("could not save the MCP tool listing: %s", exc.strerror or type(exc).__name__)

    def report(self, personas: Mapping[str, Persona], granted: Collection[str] = ()) -> str:
        """/tools: each server, its transport and state, then the tools `personas` (a channel's) may use,
        each marked read-only, approved always (`granted`, "SERVER.TOOL") or waiting for approval, with
        who may use it; how many other tools the server offers is counted, not listed."""
        lines = ["MCP tools the personas here may use, by server:"]
        for name, server in self._servers.items():
            lines.append(f"{name}: {server.state} ({'streamable HTTP' if server.section.url else 'stdio'})")
            if not self.catalog.listed(name):
                lines.append("  its tools are not listed yet (it has not started)")
                continue
            offered = self.catalog.servers.get(name, [])
            shown = 0
            for tool in offered:
                users = [p.display_name for p in personas.values() if tool in self.catalog.allowed(p)]
                if users:
                    shown += 1
                    lines.append(f"  {tool.name} ({self._standing(tool.qualified, granted)}): {', '.join(users)}")
            if shown < len(offered):
                more = len(offered) - shown
                lines.append(f"  {'and ' * bool(shown)}{more} tool{'s' * (more != 1)} no persona here may use")
        return "\n".join(lines)

    def _standing(self, qualified: str, granted: Collection[str]) -> str:
        if self.catalog.is_read_only(qualified):
            return "read-only: runs at once"
        return "approved always here" if qualified in granted else "waits for approval"


def known_tools(config: Config) -> dict[str, list[str] | None]:
    """The configured servers and, for each one the bot has listed, its tools (for persona checks)."""
    try:
        listed = json.loads((config.data_dir / LISTING_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        listed = {}
    if not isinstance(listed, dict):
        listed = {}
    return {name: listed.get(name) for name in config.settings.mcp.servers}


def _tool(server: str, tool: Any) -> McpTool:
    schema = tool.args_schema if isinstance(tool.args_schema, dict) else {"type": "object", "properties": {}}
    annotations = {k: v for k, v in (tool.metadata or {}).items() if k.endswith("Hint") and v is not None}
    return McpTool(
        server=server, name=tool.name, description=tool.description or "", input_schema=schema, annotations=annotations
    )


def _reason(exc: BaseException) -> str:
    """Why a server stopped, in one line that carries no environment values."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(e) for e in exc.exceptions[:3])
    return (
        f"{type(exc).__name__}: {str(exc)[:200]}"
        if not isinstance(exc, OSError)
        else f"{type(exc).__name__}: {exc.strerror}"
    )


def listing_path(data_dir: Path) -> Path:
    return data_dir / LISTING_FILE

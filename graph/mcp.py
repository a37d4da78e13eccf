"""Tools from MCP servers, as the graph sees them: which tools a persona may use and under which
names, their arguments checked against each tool's own input schema, and a tool's answer shaped
into the persona's tool result.

The servers themselves (processes, sessions, restarts) live in bot/mcp_servers.py, which fills the
catalog here with what each server listed and carries out calls through the `McpClient` protocol.
A tool's qualified name is "SERVER.TOOL": approvals, the audit log and "Approve always" use it. The
model sees the server's own tool name, prefixed "SERVER_" only when two servers offer the same name.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urljoin

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012

from graph.risk import Risk
from personas import Persona

QUALIFIER = "."
SCHEMA_URI = "urn:roundtable:tool-input-schema"  # a tool's schema, where its own references start from

log = logging.getLogger(__name__)


def _never_retrieve(uri: str) -> Resource[Any]:
    """A tool's schema is the server's, untrusted: no reference of it is ever fetched (no SSRF, no hang)."""
    raise NoSuchResource(uri)


LOCAL_ONLY: Registry[Any] = Registry(retrieve=_never_retrieve)  # type: ignore[call-arg]  # an attrs alias


@dataclass(frozen=True)
class McpTool:
    """One tool a server listed: its own name, description, input schema and annotations (hints only)."""

    server: str
    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    annotations: Mapping[str, Any] = field(default_factory=dict)

    @property
    def qualified(self) -> str:
        return f"{self.server}{QUALIFIER}{self.name}"

    def hints(self) -> str:
        """The server's own annotations, for approvers: untrusted, they never relax approval."""
        shown = [
            key
            for key in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
            if key in self.annotations
        ]
        return ", ".join(f"{key}={self.annotations[key]}" for key in shown)


@dataclass(frozen=True)
class McpOutcome:
    """How a call ended. `text` reaches only the persona that called the tool; `summary` is what the
    approval message and the audit log show (never the tool's own words: they are untrusted)."""

    ok: bool
    text: str
    summary: str
    server_down: bool = False


class McpClient(Protocol):
    async def call(
        self, server: str, tool: str, args: dict[str, Any], timeout_seconds: float | None = None
    ) -> McpOutcome:
        """Run one tool call on its server. Never raises: a failure is an outcome with ok=False."""

    def outage(self, server: str) -> int:
        """How many times the server has gone down: one notice per outage and channel."""


def is_mcp_action(name: str) -> bool:
    return QUALIFIER in name


class ToolCatalog:
    """What every configured server offers, as last listed, and which of its tools run without approval."""

    def __init__(
        self,
        read_only: Mapping[str, Iterable[str]] | None = None,
        *,
        risks: Mapping[str, str | Mapping[str, str]] | None = None,
        undos: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.servers: dict[str, list[McpTool]] = {name: [] for name in (read_only or {})}
        self._read_only = {server: frozenset(tools) for server, tools in (read_only or {}).items()}
        self._risks = dict(risks or {})  # [mcp.servers.X] risk: one level, or one per tool
        self._undos = {server: dict(pairs) for server, pairs in (undos or {}).items()}
        self._listed: set[str] = set()

    def update(self, server: str, tools: Sequence[McpTool]) -> None:
        """What the server listed, less each tool whose input schema refers outside itself (one line each)."""
        kept: list[McpTool] = []
        for tool in tools:
            outside = outside_reference(tool.input_schema)
            if outside is None:
                kept.append(tool)
            else:
                log.warning(
                    "MCP tool %s refused: its input schema refers outside itself (%.200r)", tool.qualified, outside
                )
        self.servers[server] = kept
        self._listed.add(server)

    def listed(self, server: str) -> bool:
        return server in self._listed

    def is_read_only(self, qualified: str) -> bool:
        server, _, tool = qualified.partition(QUALIFIER)
        return tool in self._read_only.get(server, frozenset())

    def declared_risk(self, qualified: str) -> Risk | None:
        """The risk config gives the tool ([mcp.servers.X] risk), if it gives one."""
        server, _, tool = qualified.partition(QUALIFIER)
        level = self._risks.get(server)
        if isinstance(level, Mapping):
            level = level.get(tool)
        return Risk(level) if level else None

    def has_own_risk(self, qualified: str) -> bool:
        """Whether config gives this tool a risk of its own ({ TOOL = LEVEL }), not its server's one level."""
        server, _, tool = qualified.partition(QUALIFIER)
        level = self._risks.get(server)
        return isinstance(level, Mapping) and bool(level.get(tool))

    def undo_of(self, qualified: str) -> str | None:
        """The tool that takes a call of this one back ([mcp.servers.X] undo), as "SERVER.TOOL"."""
        server, _, tool = qualified.partition(QUALIFIER)
        other = self._undos.get(server, {}).get(tool)
        return f"{server}{QUALIFIER}{other}" if other else None

    def tool(self, qualified: str) -> McpTool | None:
        server, _, name = qualified.partition(QUALIFIER)
        return next((t for t in self.servers.get(server, []) if t.name == name), None)

    def exposed_name(self, tool: McpTool) -> str:
        """The name the model sees: the server's own, prefixed only when another server has it too."""
        clash = any(
            tool.name in (t.name for t in tools) for server, tools in self.servers.items() if server != tool.server
        )
        return f"{tool.server}_{tool.name}" if clash else tool.name

    def allowed(self, persona: Persona) -> list[McpTool]:
        """The tools the persona's file allows ("git" for all of a server's, "git.git_status" for one)."""
        chosen: list[McpTool] = []
        for entry in persona.tools:
            server, _, name = entry.partition(QUALIFIER)
            chosen += [t for t in self.servers.get(server, []) if (not name or t.name == name) and t not in chosen]
        return chosen

    def find(self, persona: Persona, name: str) -> McpTool | None:
        """The allowed tool the model calls `name`, or whose qualified name (an approval's) it is."""
        return next((t for t in self.allowed(persona) if name in (self.exposed_name(t), t.qualified)), None)

    def exposed_of(self, qualified: str) -> str:
        tool = self.tool(qualified)
        return self.exposed_name(tool) if tool else qualified.partition(QUALIFIER)[2]

    def definitions(self, persona: Persona, extra: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The persona's MCP tools in OpenAI function format (what bind_tools takes), with `extra`
        properties (the optional confidence every call may state) added to each schema."""
        return [
            {
                "type": "function",
                "function": {
                    "name": self.exposed_name(t),
                    "description": t.description or t.name,
                    "parameters": model_schema(t.input_schema, extra),
                },
            }
            for t in self.allowed(persona)
        ]


_UNSUPPORTED = ("$schema", "$id", "title", "additionalProperties", "examples", "default", "$defs", "definitions")


def model_schema(schema: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A tool's input schema as models' function declarations take it: annotations that Gemini's
    schema refuses dropped (recursively); the tool's check_arguments still uses the whole schema."""

    def clean(node: Any) -> Any:
        """A schema node without annotations; the names under "properties" are arguments, all kept."""
        if isinstance(node, list):
            return [clean(v) for v in node]
        if not isinstance(node, dict):
            return node
        return {
            k: (
                {name: clean(sub) for name, sub in v.items()} if k == "properties" and isinstance(v, dict) else clean(v)
            )
            for k, v in node.items()
            if k not in _UNSUPPORTED
        }

    cleaned: dict[str, Any] = clean(dict(schema)) or {}
    cleaned["type"] = "object"
    properties = dict(cleaned.get("properties") or {})
    properties.update(extra or {})
    cleaned["properties"] = properties
    return cleaned


def outside_reference(schema: Mapping[str, Any]) -> str | None:
    """The first `$ref` (or `$dynamicRef`) of the schema that does not resolve inside the schema itself
    (a URL, a file, a pointer to nowhere); None when every reference stays inside. Nothing is fetched."""
    registry = LOCAL_ONLY.with_resource(SCHEMA_URI, DRAFT202012.create_resource(dict(schema))).crawl()
    stack: list[tuple[Any, str]] = [(schema, SCHEMA_URI)]
    while stack:  # without recursion: a server's schema may nest deeply
        node, base = stack.pop()
        if isinstance(node, Mapping):
            if isinstance(node.get("$id"), str):
                base = urljoin(base, node["$id"])
            for key in ("$ref", "$dynamicRef"):
                reference = node.get(key)
                if isinstance(reference, str):
                    try:
                        registry.resolver(base).lookup(reference)
                    except Unresolvable:
                        return reference
            stack.extend((value, base) for value in node.values())
        elif isinstance(node, list):
            stack.extend((value, base) for value in node)
    return None


def check_arguments(tool: McpTool, args: Mapping[str, Any]) -> str | None:
    """The first way `args` break the tool's input schema, in one line; None when they fit."""
    try:
        validator = Draft202012Validator(dict(tool.input_schema), registry=LOCAL_ONLY)
        errors = sorted(validator.iter_errors(dict(args)), key=lambda e: list(e.path))
    except (SchemaError, Unresolvable, RecursionError):
        return None  # a server's broken schema cannot be checked here: the server checks its own
    if not errors:
        return None
    first = errors[0]
    where = ".".join(str(p) for p in first.path) or "arguments"
    return f"{where}: {first.message}"


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _wraps(structured: Any, texts: Sequence[str]) -> bool:
    """Whether structured content only wraps the text answer (FastMCP's {"result": "..."} for a tool
    returning a plain string)."""
    return isinstance(structured, dict) and list(structured.values()) == ["\n".join(texts)] and len(structured) == 1


def describe_result(
    content: Sequence[Mapping[str, Any]], *, is_error: bool, max_chars: int, structured: Any = None
) -> McpOutcome:
    """A tool's answer as the persona's result, up to max_chars with a note when cut: text as it is;
    structured content as JSON (once: a text block that serializes it is left out, and a plain
    answer the SDK wrapped as {"result": text} stays text); images, audio and resources described by
    type and size, a resource link by its name, URI and type; an isError answer as a failure."""
    texts = [str(item.get("text", "")) for item in content if item.get("type") == "text"]
    shown_structure = structured is not None and not _wraps(structured, texts)
    parts: list[str] = [json.dumps(structured, ensure_ascii=False)] if shown_structure else []
    for item in content:
        kind = item.get("type")
        if kind == "text":
            text = str(item.get("text", ""))
            if not (shown_structure and _parsed(text) == structured):
                parts.append(text)
        elif kind in ("image", "audio"):
            size = len(str(item.get("data", ""))) * 3 // 4  # base64
            parts.append(f"[{kind} {item.get('mimeType', '?')}, {size} bytes]")
        elif kind == "resource":
            resource = item.get("resource") or {}
            body = resource.get("text") if "text" in resource else resource.get("blob", "")
            parts.append(
                f"[resource {resource.get('uri', '?')} {resource.get('mimeType') or ''}, {len(str(body))} characters]"
            )
        elif kind == "resource_link":
            mime = f", {item['mimeType']}" if item.get("mimeType") else ""
            parts.append(
                f"[resource link {item.get('name') or item.get('title') or '?'}: {item.get('uri', '?')}{mime}]"
            )
        else:
            parts.append(f"[{kind} content]")
    text = "\n".join(parts)
    total = len(text)
    if total > max_chars:
        text = text[:max_chars] + f"\n[cut: the tool returned {total} characters; the first {max_chars} are shown]"
    if is_error:
        return McpOutcome(False, f"failed: the tool reported an error: {text}", "failed: the tool reported an error")
    return McpOutcome(True, text, f"the tool answered ({total} characters)")

"""A real MCP server for the hardening tests, written with the mcp SDK (stdio):

- `where` (read-only) answers the environment and the working directory it was started with;
- `forecast` has an input schema whose `city` refers to $PROBE_REMOTE_REF (a URL), which no client
  may fetch: the tests serve that URL on loopback and count the requests;
- `echo` answers its text.

    python tests/mcp_probe_server.py
"""

from __future__ import annotations

import json
import os

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

server = FastMCP("probe", log_level="WARNING")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def where() -> str:
    """Where this server runs: its environment and working directory."""
    return json.dumps({"env": dict(os.environ), "cwd": os.getcwd()})


@server.tool()
def forecast(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


@server.tool()
def echo(text: str) -> str:
    """Answers its text."""
    return text


remote = os.environ.get("PROBE_REMOTE_REF")
listed = server._tool_manager.get_tool("forecast")
if remote and listed is not None:  # the schema a server may list: FastMCP would derive a local one
    listed.parameters = {"type": "object", "properties": {"city": {"$ref": remote}}, "required": ["city"]}

if __name__ == "__main__":
    server.run(transport="stdio")

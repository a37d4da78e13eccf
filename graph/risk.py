"""How risky an action is: low, medium, high or critical, decided in code from declarations.

A built-in action declares its risk beside its arguments (graph/actions.py `risk`); an MCP tool's
comes from `[mcp.servers.X] risk` (one level for the server's tools, or a table per tool), else
`high` for a tool config does not list read-only and `low` for one it does. A sensitive action
([approvals] sensitive, graph/policy.py `is_sensitive`) is at least `high`, whatever it declared.
"""

from __future__ import annotations

from enum import StrEnum


class Risk(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _ORDER.index(self)

    def at_most(self, ceiling: Risk | None) -> bool:
        """Whether this risk is at or below `ceiling` (None: nothing is)."""
        return ceiling is not None and self.rank <= ceiling.rank


_ORDER = (Risk.LOW, Risk.MEDIUM, Risk.HIGH, Risk.CRITICAL)
LEVELS = tuple(level.value for level in _ORDER)
SENSITIVE_FLOOR = Risk.HIGH


def risk_of(*, declared: Risk | None, sensitive: bool, mcp_read_only: bool | None = None) -> Risk:
    """The risk a request carries. `declared`: the action's own (a built-in action's definition, or
    config for an MCP tool); an MCP tool (`mcp_read_only` given) that declares none is `low` when
    config lists it read-only, else `high`; a built-in action that declares none is `medium`.
    `sensitive` raises it to at least `high`."""
    if declared is None:
        if mcp_read_only is None:
            declared = Risk.MEDIUM
        else:
            declared = Risk.LOW if mcp_read_only else Risk.HIGH
    if sensitive and declared.rank < SENSITIVE_FLOOR.rank:
        return SENSITIVE_FLOOR
    return declared

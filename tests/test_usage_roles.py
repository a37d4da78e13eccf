"""Every role a model call is counted under (graph/observe.py ROLES) is stored in token_usage, on
SQLite and PostgreSQL: a flush holding a role the table refused was lost whole (migration 031)."""

from __future__ import annotations

from typing import Any

import pytest

from graph.observe import ROLES
from storage import usage


@pytest.fixture
def storage_url(any_backend: str) -> str:
    return any_backend


async def test_every_counted_role_is_stored(open_test_app: Any) -> None:
    async with open_test_app() as app:
        counts = {("2026-12-03", "console:u", "", role, "m"): (1, 10, 2, 0) for role in ROLES}
        await usage.add_usage(app.db, counts)
        await usage.add_usage(app.db, counts)  # added to the same rows
        totals = await usage.usage_since(app.db, "console:u", "2026-12-01")
    assert sorted((t.role, t.calls) for t in totals) == sorted((role, 2) for role in ROLES)

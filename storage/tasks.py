"""Tasks: a request, its plan (JSON, as graph/tasks.py writes it), how far it got, and the platform
id of the plan message, so the message can still be edited after a restart.

The plan's progress is the LangGraph checkpoint's business; this table mirrors it after every
change for /task status and start-up, and carries the people's /task stop and /task replan to the
supervisor, which reads them between steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from storage.database import Database, Row
from storage.history import insert_line
from storage.records import LineKind

ACTIVE = ("planning", "running")


@dataclass(frozen=True, slots=True)
class TaskRecord:
    id: int
    channel_key: str
    thread: str | None
    status: str  # planning, running, completed, failed or stopped
    request: str
    author_name: str
    plan: str | None  # JSON
    note: str  # how it ended
    shown_as: str | None  # the plan message's platform id
    stop_requested: bool
    instruction: str | None  # a /task replan the supervisor has not taken yet

    @property
    def active(self) -> bool:
        return self.status in ACTIVE


def _task(row: Row) -> TaskRecord:
    return TaskRecord(
        id=int(row["id"]),
        channel_key=row["channel_key"],
        thread=row["thread"],
        status=row["status"],
        request=row["request"],
        author_name=row["author_name"],
        plan=row["plan"],
        note=row["note"],
        shown_as=row["shown_as"],
        stop_requested=bool(row["stop_requested"]),
        instruction=row["instruction"],
    )


async def start(
    db: Database,
    channel_key: str,
    thread: str | None,
    request: str,
    author_id: str,
    author_name: str,
    *,
    record_line: bool = True,
) -> TaskRecord | None:
    """A new task, with its request in the channel's history (unless it is there already), in one
    transaction; None while the channel already has an active task."""
    now = time.time()
    async with db.transaction() as tx:
        await tx.serialize(f"tasks:{channel_key}")
        busy = await tx.fetch_one(
            "SELECT id FROM tasks WHERE channel_key = ? AND status IN ('planning', 'running')", (channel_key,)
        )
        if busy is not None:
            return None
        if record_line:
            await insert_line(tx, channel_key, LineKind.HUMAN, author_id, author_name, request)
        row = await tx.fetch_one(
            "INSERT INTO tasks (channel_key, thread, request, author_name, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) RETURNING *",
            (channel_key, thread, request, author_name, now, now),
        )
    assert row is not None
    return _task(row)


async def get(db: Database, task_id: int) -> TaskRecord | None:
    row = await db.fetch_one("SELECT * FROM tasks WHERE id = ?", (task_id,))
    return _task(row) if row else None


async def latest(db: Database, channel_key: str) -> TaskRecord | None:
    """The channel's newest task, finished or not."""
    row = await db.fetch_one("SELECT * FROM tasks WHERE channel_key = ? ORDER BY id DESC LIMIT 1", (channel_key,))
    return _task(row) if row else None


async def unfinished(db: Database) -> list[TaskRecord]:
    """Tasks a stop interrupted, oldest first: start-up resumes them."""
    rows = await db.fetch_all("SELECT * FROM tasks WHERE status IN ('planning', 'running') ORDER BY id")
    return [_task(row) for row in rows]


async def save(db: Database, task_id: int, *, status: str, plan: str | None, note: str = "") -> None:
    async with db.transaction() as tx:
        await tx.execute(
            "UPDATE tasks SET status = ?, plan = ?, note = ?, updated_at = ? WHERE id = ?",
            (status, plan, note, time.time(), task_id),
        )


async def set_shown_as(db: Database, task_id: int, shown_as: str | None) -> None:
    async with db.transaction() as tx:
        await tx.execute("UPDATE tasks SET shown_as = ? WHERE id = ?", (shown_as, task_id))


async def request_stop(db: Database, task_id: int) -> bool:
    """Whether the task was active and now stops before its next step."""
    async with db.transaction() as tx:
        changed = await tx.execute(
            "UPDATE tasks SET stop_requested = 1 WHERE id = ? AND status IN ('planning', 'running')", (task_id,)
        )
    return changed == 1


async def request_replan(db: Database, task_id: int, instruction: str) -> bool:
    """Whether the task was active; the supervisor replans with `instruction` before its next step."""
    async with db.transaction() as tx:
        changed = await tx.execute(
            "UPDATE tasks SET instruction = ? WHERE id = ? AND status IN ('planning', 'running')",
            (instruction, task_id),
        )
    return changed == 1


async def clear_instruction(db: Database, task_id: int, instruction: str) -> None:
    """The replan with `instruction` is done (a newer one, asked meanwhile, stays)."""
    async with db.transaction() as tx:
        await tx.execute("UPDATE tasks SET instruction = NULL WHERE id = ? AND instruction = ?", (task_id, instruction))


async def reply_after(db: Database, channel_key: str, persona_id: str, after_line_id: int) -> str | None:
    """The persona's first line after a given line (a step's answer): its text, or the names of
    the actions it asked for when it only acted; None when it said nothing."""
    row = await db.fetch_one(
        "SELECT text, tool_calls FROM lines WHERE channel_key = ? AND author_id = ? AND kind = 'persona' AND id > ? "
        "ORDER BY id LIMIT 1",
        (channel_key, persona_id, after_line_id),
    )
    if row is None:
        return None
    return str(row["text"]) or ("asked for an action" if row["tool_calls"] else None)

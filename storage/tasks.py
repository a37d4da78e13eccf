"""Tasks: a request, its plan (JSON, as graph/tasks.py writes it), how far it got, and the platform
id of the plan message, so the message can still be edited after a restart.

The plan's progress is the LangGraph checkpoint's business; this table mirrors it after every
change for /task status and start-up, and carries what people ask of a running task (stop, replan,
pause, takeover, steps they finished, cancel) to the supervisor, which reads them between steps.
Each step's latest attempt is recorded (task_steps) with its private note, so a step a crash cut
short is not run again once its persona answered, and one that ended is taken as it ended.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from itertools import takewhile

from storage.database import Database, Row
from storage.history import insert_line, insert_private_line
from storage.records import Line, LineKind

ACTIVE = ("planning", "running")


@dataclass(frozen=True, slots=True)
class HandIn:
    """A step a person says they finished: /task done N [result]."""

    step: int
    by: str
    result: str


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
    author_id: str = ""  # the requester's platform id ("" for tasks stored before it was kept)
    paused_by: str | None = None
    taken_by: str | None = None  # who does the remaining steps instead of the personas
    handed_in: list[HandIn] = field(default_factory=list)  # /task done, not taken by the supervisor yet
    cancelled_by: str | None = None
    cancel_reason: str = ""
    recheck: bool = False  # resumed by a person: the planner checks the plan before it goes on

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
        author_id=row["author_id"],
        paused_by=row["paused_by"],
        taken_by=row["taken_by"],
        handed_in=[HandIn(int(h["step"]), str(h["by"]), str(h["result"])) for h in json.loads(row["handed_in"])],
        cancelled_by=row["cancelled_by"],
        cancel_reason=row["cancel_reason"],
        recheck=bool(row["recheck"]),
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
            "INSERT INTO tasks (channel_key, thread, request, author_id, author_name, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *",
            (channel_key, thread, request, author_id, author_name, now, now),
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


async def set_paused(db: Database, task_id: int, by: str | None) -> bool:
    """Pause the task (by that person) or, with None, resume it; whether it was active."""
    return await _set_active(db, task_id, "paused_by = ?", (by,))


async def take_over(db: Database, task_id: int, by: str | None) -> bool:
    """A person does the remaining steps (None: they go back to the personas); whether it was active."""
    return await _set_active(db, task_id, "taken_by = ?", (by,))


async def cancel(db: Database, task_id: int, by: str, reason: str) -> bool:
    """The task ends before its next step; whether it was active (and not cancelled already)."""
    return await _set_active(
        db, task_id, "cancelled_by = ?, cancel_reason = ?", (by, reason), extra="AND cancelled_by IS NULL"
    )


async def _set_active(db: Database, task_id: int, assignment: str, params: tuple[object, ...], extra: str = "") -> bool:
    async with db.transaction() as tx:
        changed = await tx.execute(
            f"UPDATE tasks SET {assignment}, updated_at = ? WHERE id = ? AND status IN ('planning', 'running') {extra}",
            (*params, time.time(), task_id),
        )
    return changed == 1


async def hand_in(db: Database, task_id: int, step: int, by: str, result: str) -> bool:
    """A step a person finished, for the supervisor to mark done; whether the task was active."""
    async with db.transaction() as tx:
        await tx.serialize(f"task:{task_id}")
        row = await tx.fetch_one(
            "SELECT handed_in FROM tasks WHERE id = ? AND status IN ('planning', 'running')", (task_id,)
        )
        if row is None:
            return False
        given = [h for h in json.loads(row["handed_in"]) if h["step"] != step]
        given.append({"step": step, "by": by, "result": result})
        await tx.execute("UPDATE tasks SET handed_in = ? WHERE id = ?", (json.dumps(given), task_id))
    return True


async def clear_handed_in(db: Database, task_id: int, steps: list[int]) -> None:
    """The supervisor took these steps' hand-ins (others, handed in meanwhile, stay)."""
    async with db.transaction() as tx:
        await tx.serialize(f"task:{task_id}")
        row = await tx.fetch_one("SELECT handed_in FROM tasks WHERE id = ?", (task_id,))
        if row is not None:
            left = [h for h in json.loads(row["handed_in"]) if h["step"] not in steps]
            await tx.execute("UPDATE tasks SET handed_in = ? WHERE id = ?", (json.dumps(left), task_id))


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One step's latest attempt, as stored: its private note, and the step (JSON, graph.tasks.Step)
    as the attempt began or, once `finished`, as it ended."""

    step_id: int
    revision: int
    attempt: int
    note_line: int
    step: str
    finished: bool


async def begin_step(
    db: Database, task_id: int, step_id: int, revision: int, attempt: int, persona_id: str, note: str, step: str
) -> tuple[int, bool]:
    """An attempt at a step: its private note to its persona and the step (JSON) recorded as under way,
    in one transaction: (the note's line id, whether this attempt had begun before: a stop cut it
    short and it runs on from what was committed, with the same note). Each step of a task has its
    own record, so steps under way side by side each resume on their own."""
    async with db.transaction() as tx:
        await tx.serialize(f"task:{task_id}")
        row = await tx.fetch_one(
            "SELECT s.revision, s.attempt, s.note_line, l.text FROM task_steps s "
            "LEFT JOIN lines l ON l.id = s.note_line WHERE s.task_id = ? AND s.step_id = ?",
            (task_id, step_id),
        )
        # The same attempt of the same step (a replan may give a new step an old number: its revision
        # and note differ) was begun before.
        if row is not None and (row["revision"], row["attempt"], row["text"]) == (revision, attempt, note):
            return int(row["note_line"]), True
        task = await tx.fetch_one("SELECT channel_key FROM tasks WHERE id = ?", (task_id,))
        assert task is not None
        line = Line(0, task["channel_key"], LineKind.MARKER, "system", "system", note, time.time())
        stored = await insert_private_line(tx, line, persona_id)
        await tx.execute(
            "INSERT INTO task_steps (task_id, step_id, revision, attempt, note_line, step, finished, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, 0, ?) ON CONFLICT (task_id, step_id) DO UPDATE SET "
            "revision = excluded.revision, attempt = excluded.attempt, note_line = excluded.note_line, "
            "step = excluded.step, finished = 0, updated_at = excluded.updated_at",
            (task_id, step_id, revision, attempt, stored.id, step, time.time()),
        )
    return stored.id, False


async def end_step(db: Database, task_id: int, step_id: int, revision: int, attempt: int, step: str) -> None:
    """How an attempt ended (the step as JSON): a restart takes it as it is rather than run it again."""
    async with db.transaction() as tx:
        await tx.execute(
            "UPDATE task_steps SET step = ?, finished = 1, updated_at = ? "
            "WHERE task_id = ? AND step_id = ? AND revision = ? AND attempt = ?",
            (step, time.time(), task_id, step_id, revision, attempt),
        )


async def step_records(db: Database, task_id: int) -> list[StepRecord]:
    rows = await db.fetch_all(
        "SELECT step_id, revision, attempt, note_line, step, finished FROM task_steps WHERE task_id = ? ORDER BY step_id",
        (task_id,),
    )
    return [
        StepRecord(
            int(r["step_id"]),
            int(r["revision"]),
            int(r["attempt"]),
            int(r["note_line"]),
            r["step"],
            bool(r["finished"]),
        )
        for r in rows
    ]


async def set_recheck(db: Database, task_id: int, recheck: bool) -> None:
    """A person resumed the task (True): the planner checks its plan before it goes on; False once checked."""
    async with db.transaction() as tx:
        await tx.execute("UPDATE tasks SET recheck = ? WHERE id = ?", (int(recheck), task_id))


async def reply_after(db: Database, channel_key: str, persona_id: str, after_line_id: int) -> str | None:
    """The persona's answer to a given line (a step's note): the last line of its turn after it, which
    is its first line without tool calls (its final reply after its tool steps) or, when every line
    made calls (its actions wait for a person), the last of them. Its text, else the names of the
    actions it asked for when it only acted; None when it said nothing. The words of a tool step
    before its tools answered were never posted, so they are never the answer."""
    rows = await db.fetch_all(
        "SELECT text, tool_calls FROM lines WHERE channel_key = ? AND author_id = ? AND kind = 'persona' AND id > ? "
        "ORDER BY id",
        (channel_key, persona_id, after_line_id),
    )
    turn = list(takewhile(lambda row: bool(row["tool_calls"]), rows))
    last = rows[len(turn)] if len(turn) < len(rows) else (turn[-1] if turn else None)
    if last is None:
        return None
    return str(last["text"]) or ("asked for an action" if last["tool_calls"] else None)


async def mark_rolled_back(db: Database, task_id: int, by: str) -> None:
    """Someone asked to roll the task back (/task cancel rollback): it earns no trust for what it completed."""
    async with db.transaction() as tx:
        await tx.execute("UPDATE tasks SET rolled_back_by = ? WHERE id = ? AND rolled_back_by IS NULL", (by, task_id))

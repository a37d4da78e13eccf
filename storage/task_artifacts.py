"""A task's artifacts: each step's whole result, and the task's answer.

A step's artifact is its persona's whole reply with what its actions did (or what a person said
they did, /task done), bounded by the supervisor ([tasks] max_artifact_chars); the steps that
depend on it get it whole in their notes. The answer is the integrator's reply after the last step
(graph/task_answer.py), kept as step ANSWER_STEP, for /task status and /task result. Writing an
artifact again (a step settles after its approvals, a replan reuses a step's number) replaces it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from storage.database import Database

ANSWER_STEP = 0


@dataclass(frozen=True, slots=True)
class Artifact:
    step_id: int
    author_id: str  # a persona id, or the name of the person who did the step
    text: str


async def put(db: Database, task_id: int, step_id: int, author_id: str, text: str) -> None:
    async with db.transaction() as tx:
        await tx.execute(
            "INSERT INTO task_artifacts (task_id, step_id, author_id, text, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (task_id, step_id) DO UPDATE SET author_id = excluded.author_id, text = excluded.text, "
            "updated_at = excluded.updated_at",
            (task_id, step_id, author_id, text, time.time()),
        )


async def of_task(db: Database, task_id: int) -> dict[int, Artifact]:
    """Every artifact of the task by step number (the answer, when there is one, under ANSWER_STEP)."""
    rows = await db.fetch_all(
        "SELECT step_id, author_id, text FROM task_artifacts WHERE task_id = ? ORDER BY step_id", (task_id,)
    )
    return {int(r["step_id"]): Artifact(int(r["step_id"]), r["author_id"], r["text"]) for r in rows}


async def answer(db: Database, task_id: int) -> Artifact | None:
    """The task's answer, once its integrator wrote it."""
    return (await of_task(db, task_id)).get(ANSWER_STEP)

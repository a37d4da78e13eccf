"""Task mode in a channel: /task TEXT, /task status, /task stop, /task replan TEXT, and the
coordinator's reading of human lines when [tasks] auto_detect is on.

A task runs in its channel's queue like a round (graph/task_flow.py supervises it); /task stop and
/task replan are stored at once and taken by the supervisor between steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.command_values import TaskCommand
from graph.engine import RoundEngine
from graph.tasks import Plan, TaskStatus, render_plan
from storage import tasks
from storage.database import Database
from storage.tasks import TaskRecord


@dataclass(frozen=True)
class RunTask:
    """A queued item: run a task, or resume it where it was."""

    channel_key: str
    task_id: int


Enqueue = Callable[[RunTask], None]


class TaskDesk:
    def __init__(self, db: Database, engine: RoundEngine, enqueue: Enqueue, *, auto_detect: bool) -> None:
        self.db = db
        self.engine = engine
        self.enqueue = enqueue
        self.auto_detect = auto_detect

    async def command(
        self, key: str, command: TaskCommand, thread: str | None, author_id: str, author_name: str
    ) -> tuple[str, bool]:
        """What to answer the person who typed it, and whether it was done."""
        if command.verb == "start":
            task = await tasks.start(self.db, key, thread, command.text, author_id, author_name)
            if task is None:
                return "A task is already running here: /task status shows it, /task stop ends it.", False
            self.enqueue(RunTask(key, task.id))
            return f"Task #{task.id} taken: the planner splits it into steps now.", True
        latest = await tasks.latest(self.db, key)
        if command.verb == "status":
            return (self.status_text(latest), True) if latest else ("No task here yet: /task TEXT starts one.", False)
        if latest is None or not latest.active:
            return "No task is running here.", False
        if command.verb == "stop":
            await tasks.request_stop(self.db, latest.id)
            return f"Task #{latest.id} stops before its next step; finished steps stay done.", True
        await tasks.request_replan(self.db, latest.id, command.text)
        return f"Task #{latest.id} is replanned before its next step; completed steps are kept.", True

    def status_text(self, task: TaskRecord) -> str:
        plan = Plan.model_validate_json(task.plan) if task.plan else None
        names = {p.id: p.display_name for p in self.engine.deps.personas.values()}
        status: TaskStatus = task.status  # type: ignore[assignment]  # the table's CHECK keeps it one of them
        return render_plan(task.id, plan, status, names, task.note)

    async def start_if_task(self, key: str, thread: str | None, text: str, author_name: str) -> bool:
        """With auto_detect on, a human line the coordinator reads as a task runs as one, in place of
        a round (its line is already in the history). False: answer it with a round."""
        if not self.auto_detect or text.startswith("/") or not await self.engine.tasks.is_task(text, author_name):
            return False
        task = await tasks.start(self.db, key, thread, text, "", author_name, record_line=False)
        if task is None:
            return False  # one task at a time: the line is answered as chat
        await self.engine.tasks.run(task.id)
        return True

    async def resume_all(self, channel_key: str | None = None) -> None:
        """Every unfinished task (of one channel) runs on from its last checkpoint: at start-up, and
        when a channel's replies resume."""
        for task in await tasks.unfinished(self.db):
            if channel_key in (None, task.channel_key):
                self.enqueue(RunTask(task.channel_key, task.id))

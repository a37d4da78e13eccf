-- 22: a task's steps under way, each with its own private note and attempt (steps run side by
-- side), and a task resumed by a person, whose plan the planner checks before it goes on
    CREATE TABLE task_steps (
        task_id    {bigint} NOT NULL REFERENCES tasks(id),
        step_id    INTEGER NOT NULL,
        revision   INTEGER NOT NULL,  -- the plan's: a replan may give a new step an old number
        attempt    INTEGER NOT NULL,
        note_line  {bigint} NOT NULL,  -- the private note of this attempt
        step       TEXT NOT NULL,  -- JSON: graph.tasks.Step as the attempt began, or as it ended
        finished   INTEGER NOT NULL DEFAULT 0 CHECK (finished IN (0, 1)),
        updated_at {real} NOT NULL,
        PRIMARY KEY (task_id, step_id)
    );
    ALTER TABLE tasks ADD COLUMN recheck INTEGER NOT NULL DEFAULT 0;
    

-- 12: tasks: the request, its plan (JSON) and status, the plan message's platform id, and the
-- people's stop and replan requests waiting for the supervisor
    CREATE TABLE tasks (
        id             {id},
        channel_key    TEXT NOT NULL REFERENCES channels(key),
        thread         TEXT,
        status         TEXT NOT NULL DEFAULT 'planning'
                       CHECK (status IN ('planning', 'running', 'completed', 'failed', 'stopped')),
        request        TEXT NOT NULL,
        author_name    TEXT NOT NULL,
        plan           TEXT,  -- JSON: graph.tasks.Plan
        note           TEXT NOT NULL DEFAULT '',  -- how the task ended
        shown_as       TEXT,  -- the plan message's platform id, to edit it
        stop_requested INTEGER NOT NULL DEFAULT 0,
        instruction    TEXT,  -- a /task replan not taken yet
        created_at     {real} NOT NULL,
        updated_at     {real} NOT NULL
    );
    CREATE INDEX tasks_by_channel ON tasks (channel_key, status);
    

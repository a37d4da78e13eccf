-- 23: a task's artifacts: each step's whole result (its persona's reply and what its actions
-- did, or what a person said they did), and the task's answer (step 0), written by its integrator
    CREATE TABLE task_artifacts (
        task_id    {bigint} NOT NULL REFERENCES tasks(id),
        step_id    INTEGER NOT NULL,  -- 0: the task's answer
        author_id  TEXT NOT NULL,  -- the persona id, or the name of the person who did the step
        text       TEXT NOT NULL,
        updated_at {real} NOT NULL,
        PRIMARY KEY (task_id, step_id)
    );
    

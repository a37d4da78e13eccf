-- 16: a person steering a task: who asked for it (only they or an approver may steer it), who
-- paused it, who took over its remaining steps, the steps people finished (/task done, JSON,
-- waiting for the supervisor), a cancellation, and the step under way with its private note
-- (a step cut short runs again only if its persona has not answered that note)
    ALTER TABLE tasks ADD COLUMN author_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE tasks ADD COLUMN paused_by TEXT;
    ALTER TABLE tasks ADD COLUMN taken_by TEXT;
    ALTER TABLE tasks ADD COLUMN handed_in TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE tasks ADD COLUMN cancelled_by TEXT;
    ALTER TABLE tasks ADD COLUMN cancel_reason TEXT NOT NULL DEFAULT '';
    ALTER TABLE tasks ADD COLUMN step_id INTEGER;
    ALTER TABLE tasks ADD COLUMN step_note {bigint};
    

-- 24: each approval's risk (graph/risk.py) and the task step it serves, and the risk in the audit log
    ALTER TABLE approvals ADD COLUMN risk TEXT NOT NULL DEFAULT '';
    ALTER TABLE approvals ADD COLUMN task_id INTEGER;
    ALTER TABLE approvals ADD COLUMN task_title TEXT;
    ALTER TABLE approvals ADD COLUMN task_step INTEGER;
    ALTER TABLE approvals ADD COLUMN task_steps INTEGER;
    CREATE INDEX approvals_by_task ON approvals (task_id);
    ALTER TABLE audit_log ADD COLUMN risk TEXT;
    

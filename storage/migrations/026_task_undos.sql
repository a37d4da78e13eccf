-- 26: (task undos) each undo a rollback asked for, at most one per original action (its
-- approval id), taken again only once that undo was rejected or expired; and who asked to roll a
-- task back (such a task earns no trust for its completed steps, graph/trust.py)
    CREATE TABLE task_undos (
        undoes   {bigint} PRIMARY KEY REFERENCES approvals(id),  -- the original action's approval
        task_id  {bigint} NOT NULL REFERENCES tasks(id),
        batch    TEXT NOT NULL,  -- the rollback batch whose request undo-<undoes> asks for it
        asked_at {real} NOT NULL
    );
    ALTER TABLE tasks ADD COLUMN rolled_back_by TEXT;
    UPDATE tasks SET rolled_back_by = '' WHERE id IN (SELECT task_id FROM approvals WHERE batch LIKE 'rollback:%');
    

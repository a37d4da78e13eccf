-- 6: an approved action's run is claimed before it starts ('running', by one process), so a
-- run cut short by a stop is reported ('unknown') instead of being run blindly again
    {widen_approval_status}
    ALTER TABLE approvals ADD COLUMN started_at {real};
    ALTER TABLE approvals ADD COLUMN runner TEXT;  -- the process that claimed the run
    

-- 14: model failures in a row per channel, toward [approvals] failures_before_pause: stored, so
-- that a restart or another process goes on counting
    ALTER TABLE channels ADD COLUMN failures_in_a_row INTEGER NOT NULL DEFAULT 0;
    
